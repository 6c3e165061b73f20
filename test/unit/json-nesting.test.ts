import { expect } from "chai";
import { nestsDeeperThan } from "../../src/json/json-nesting.js";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("nestsDeeperThan", () => {
  it("counts arrays and objects, and nothing inside strings", () => {
    expect(nestsDeeperThan([bytes('{"a":[{"b":[1]}]}')], 4)).to.equal(false);
    expect(nestsDeeperThan([bytes('{"a":[{"b":[1]}]}')], 3)).to.equal(true);
    expect(nestsDeeperThan([bytes(`{"a":"${"[".repeat(50)}"}`)], 2)).to.equal(false);
    // An escaped quote does not end the string; an escaped backslash before a quote does.
    expect(nestsDeeperThan([bytes('{"a":"\\"[[[[","b":1}')], 1)).to.equal(false);
    expect(nestsDeeperThan([bytes('{"a":"\\\\",  "b":[[1]]}')], 2)).to.equal(true);
  });

  it("follows the nesting across chunk boundaries, inside strings too", () => {
    const text = `{"s":"a]]\\"}","x":${"[".repeat(10)}${"]".repeat(10)}}`;
    for (let cut = 0; cut <= text.length; cut++) {
      const whole = bytes(text);
      const chunks = [whole.subarray(0, cut), whole.subarray(cut)];
      expect(nestsDeeperThan(chunks, 11), `cut at ${cut}`).to.equal(false);
      expect(nestsDeeperThan(chunks, 10), `cut at ${cut}`).to.equal(true);
    }
  });

  it("leaves multi-byte characters alone", () => {
    expect(nestsDeeperThan([bytes('{"ü[€":"[𝄞["}')], 1)).to.equal(false);
  });
});
