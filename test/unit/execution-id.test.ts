import { expect } from "chai";
import { newExecutionId } from "../../src/executions/execution-id.js";

describe("newExecutionId()", () => {
  it("gives random version 4 UUIDs, each different", () => {
    const ids = Array.from({ length: 1000 }, () => newExecutionId());
    for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).to.equal(ids.length);
  });
});
