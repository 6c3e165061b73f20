import { expect } from "chai";
import {
  compileLinearRegExp,
  schemaPatternBudget,
  UnsupportedPatternError,
  withPatternBudget,
} from "../../src/json/linear-regexp.js";
import { checkSchema, InvalidSchemaError } from "../../src/json/schema-validator.js";

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

describe("withPatternBudget()", () => {
  it("refuses the pattern that would take a schema's patterns past the budget, naming it", () => {
    const patterns = Array.from({ length: 40 }, (_, index) => `(\\p{L}|\\p{N}){999}${index}`);
    let compiledCount = 0;
    let refusal: unknown;
    withPatternBudget(schemaPatternBudget, () => {
      try {
        for (const pattern of patterns) {
          compileLinearRegExp(pattern);
          compiledCount += 1;
        }
      } catch (error) {
        refusal = error;
      }
    });
    // Each repeats its two-way alternation of Unicode properties (4 each) 999 times, and ends
    // with a digit: 7,993 of the 32,768, so four fit.
    expect(compiledCount).to.equal(4);
    expect(refusal).to.be.instanceOf(UnsupportedPatternError);
    expect((refusal as Error).message).to.contain('pattern "(\\\\p{L}|\\\\p{N}){999}4" repeats about 7993 times');
  });

  it("gives each schema a budget of its own, and none outside a check", () => {
    for (let schema = 0; schema < 3; schema++) {
      withPatternBudget(schemaPatternBudget, () => {
        for (let index = 0; index < 4; index++) compileLinearRegExp(`(\\p{L}|\\p{N}){999}s${schema}i${index}`);
      });
    }
    for (let index = 0; index < 20; index++) compileLinearRegExp(`(\\p{L}|\\p{N}){999}free${index}`);
  });

  it("charges every occurrence of a pattern, remembered or not: the compiler compiles each", () => {
    const allOf = Array.from({ length: 50 }, () => ({ pattern: "(\\p{L}|\\p{N}){999}" }));
    expect(() => checkSchema({ allOf }))
      .to.throw(InvalidSchemaError)
      .with.property("message")
      .that.contains("one schema's patterns may take together");
    // On 400 properties, not all on one value: 400 tests of one value are over the bound on work.
    const small = Object.fromEntries(
      Array.from({ length: 400 }, (_, index) => [`p${index}`, { pattern: "^[a-z0-9-]{1,63}$" }]),
    );
    checkSchema({ properties: small });
  });

  it("reads a caret kept first in a class holding \\S as a caret", () => {
    for (const pattern of ["^[\\S^]$", "^[\\S^a]$"]) {
      const linear = compileLinearRegExp(pattern);
      const ecma = new RegExp(pattern, "u");
      for (const input of [" ", "\t", "\n", "\u00a0", "^", "a", "b"]) {
        expect(linear.test(input), `${pattern} on ${JSON.stringify(input)}`).to.equal(ecma.test(input));
      }
    }
  });

  it("refuses over RegisterTool's check a schema whose patterns together take too long to compile", () => {
    const properties = Object.fromEntries(
      Array.from({ length: 40 }, (_, index) => [
        `p${index}`,
        { type: "string", pattern: `(\\p{L}|\\p{N}){999}${index}` },
      ]),
    );
    expect(() => checkSchema({ type: "object", properties }))
      .to.throw(InvalidSchemaError)
      .with.property("message")
      .that.contains("one schema's patterns may take together");
  });
});
