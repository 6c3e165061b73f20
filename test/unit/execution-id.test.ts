import { expect } from "chai";
import { newExecutionId } from "../../src/executions/execution-id.js";

describe("newExecutionId()", () => {
  it("gives random version 4 UUIDs, each different, across batches of random bytes", () => {
    // More than one batch (512 ids) of random bytes.
    const ids = Array.from({ length: 2000 }, () => newExecutionId());
    for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it("draws every digit of every random position: no byte is left as it was or written twice", () => {
    const ids = Array.from({ length: 2000 }, () => newExecutionId());
    const fixed = new Map([
      [14, "4"],
      [8, "-"],
      [13, "-"],
      [18, "-"],
      [23, "-"],
    ]);
    for (let position = 0; position < 36; position++) {
      const seen = new Set(ids.map((id) => id[position]));
      if (fixed.has(position)) expect([...seen], `position ${position}`).to.deep.equal([fixed.get(position)]);
      else if (position === 19) expect(seen.size, "the variant's digit").to.equal(4);
      else expect(seen.size, `position ${position}`).to.equal(16);
    }
  });
});
