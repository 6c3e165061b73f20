import { createHash } from "node:crypto";
import { expect } from "chai";
import { inputsDigest } from "../../src/executions/inputs-digest.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

describe("inputsDigest()", () => {
  it("is the SHA-256 of the canonical JSON text: keys sorted at every depth, no whitespace", () => {
    const inputs = { b: 1, a: [{ y: "é", x: null }, 2.5], c: { e: true, d: "" } };
    const canonical = '{"a":[{"x":null,"y":"é"},2.5],"b":1,"c":{"d":"","e":true}}';
    expect(inputsDigest(inputs)).to.equal(sha256(canonical));
    expect(inputsDigest({ c: { d: "", e: true }, a: [{ x: null, y: "é" }, 2.5], b: 1 })).to.equal(sha256(canonical));
    expect(inputsDigest({})).to.equal(sha256("{}"));
  });

  it("gives a value that is not JSON the digest of the text (not JSON)", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    expect(inputsDigest(cyclic)).to.equal(sha256("(not JSON)"));
  });
});
