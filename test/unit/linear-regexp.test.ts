import { expect } from "chai";
import { compileLinearRegExp, UnsupportedPatternError } from "../../src/json/linear-regexp.js";

/**
 * Patterns whose characters sets mean different things in RE2 and in ECMA-262, the dialect of JSON
 * Schema's `pattern`, and others that mean the same: each against inputs that tell them apart.
 */
const patterns = [
  "^\\s$",
  "^\\S+$",
  "^.$",
  "^.*$",
  "^(/.*)?$",
  "^[\\s]$",
  "^[a\\s]$",
  "^[^a\\s]$",
  "^[\\s\\S]$",
  "^[a\\S]$",
  "^[\\S]$",
  "^[.\\s]$",
  "^\\w+$",
  "^\\d$",
  "\\bx",
  "^[^]$",
  "^\\p{L}$",
  "^a$",
];
const inputs = [
  " ",
  "\t",
  "\u000b",
  "\u00a0",
  "\u1680",
  "\u2000",
  "\u200a",
  "\u2028",
  "\u2029",
  "\u202f",
  "\u205f",
  "\u3000",
  "\ufeff",
  "\n",
  "\r",
  "a",
  "b",
  ".",
  "é",
  "٣",
  "😀",
  "/a\rb",
  "/a\u2028b",
  "abc\u00a0def",
  "a\n",
  "x",
];

describe("compileLinearRegExp()", () => {
  for (const pattern of patterns) {
    it(`matches ${JSON.stringify(pattern)} as ECMA-262 (unicode mode) does, on every input`, () => {
      const linear = compileLinearRegExp(pattern);
      const ecma = new RegExp(pattern, "u");
      const differences = inputs.filter((input) => linear.test(input) !== ecma.test(input));
      expect(differences.map((input) => JSON.stringify(input))).to.deep.equal([]);
    });
  }

  it("refuses \\S in a negated class, which it cannot write for RE2, naming the class", () => {
    expect(() => compileLinearRegExp("^[^a\\S]$"))
      .to.throw(UnsupportedPatternError)
      .with.property("message")
      .that.contains('negated class "[^a\\\\S]"');
  });
});
