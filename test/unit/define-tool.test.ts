import { expect } from "chai";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { compileSchema } from "../../src/json/schema-validator.js";
import { loadToolModule } from "../../src/load-tools.js";
import { defineTool, type ToolDefinitionInit } from "../../src/tools/define-tool.js";

const handler = () => ({});

/** The ToolRuntimeError `define` throws, checked to be an INVALID_ARGUMENT RegistrationError. */
function refusal(define: () => unknown): ToolRuntimeError {
  try {
    define();
  } catch (error) {
    expect(error).to.be.instanceOf(ToolRuntimeError);
    const refused = error as ToolRuntimeError;
    expect(refused.code).to.equal("INVALID_ARGUMENT");
    expect(refused.errorType).to.equal("RegistrationError");
    return refused;
  }
  throw new Error("the definition should have been refused");
}

/** Defines a tool from a plain object, as a JavaScript module would (no type checking). */
const defineLoose = (definition: Record<string, unknown>) => defineTool(definition as unknown as ToolDefinitionInit);

describe("defineTool()", () => {
  describe("keys", () => {
    it("refuses a snake_case key with the camelCase key it meant", () => {
      const error = refusal(() => defineLoose({ name: "demo.tool", input_schema: { type: "object" }, handler }));
      expect(error.details).to.equal(
        'tool "demo.tool" has the unknown key "input_schema": did you mean "inputSchema"?',
      );
      expect(error.toolName).to.equal("demo.tool");
    });

    it("refuses a misspelt capability and a misspelt hook, listing every problem at once", () => {
      const error = refusal(() =>
        defineLoose({
          name: "demo.tool",
          capabilities: { readonly: true, checkpointable: true },
          hooks: { checkpoint: () => 1, rolback: () => undefined },
          handler,
        }),
      );
      expect(error.details).to.equal(
        'tool "demo.tool" has the unknown key "capabilities.readonly": did you mean "readOnly"?; has the unknown key "hooks.rolback": did you mean "rollback"?',
      );
    });

    it("lists the known keys when no key is close", () => {
      const error = refusal(() => defineLoose({ name: "demo.tool", colour: "blue", handler }));
      expect(error.details).to.equal(
        'tool "demo.tool" has the unknown key "colour": use "name", "description", "toolType", "capabilities", "inputSchema", "outputSchema", "defaultTimeoutMs", "maxTimeoutMs", "maxConcurrency", "handler", "hooks"',
      );
    });

    it("refuses values of the wrong kind, showing the value", () => {
      const error = refusal(() =>
        defineLoose({ name: "demo.tool", maxConcurrency: "3", capabilities: { idempotent: 1 }, handler }),
      );
      expect(error.details).to.equal(
        'tool "demo.tool" has "maxConcurrency" = "3": use a whole number, 0 or more; has "capabilities.idempotent" = 1: use true or false',
      );
    });

    it("names the definition's own keys in the spec's rules", () => {
      const error = refusal(() =>
        defineTool({ name: "demo.tool", defaultTimeoutMs: 2000, maxTimeoutMs: 1000, handler }),
      );
      expect(error.details).to.equal(
        'defaultTimeoutMs of "demo.tool" (2000) exceeds its maxTimeoutMs (1000): lower the default or raise the maximum',
      );
      const contradictory = refusal(() =>
        defineTool({ name: "demo.tool", capabilities: { readOnly: true, writes: true }, handler }),
      );
      expect(contradictory.details).to.equal(
        'capabilities of "demo.tool" are contradictory: a readOnly tool cannot be writes; clear readOnly or writes',
      );
    });
  });

  describe("schemas", () => {
    it("refuses an unknown JSON Schema keyword with the keyword it meant", () => {
      const error = refusal(() =>
        defineTool({ name: "demo.tool", inputSchema: { type: "object", requried: ["path"] }, handler }),
      );
      expect(error.details).to.equal(
        'inputSchema of "demo.tool" is not a valid JSON Schema (draft 2020-12): it uses the unknown keyword "requried": did you mean "required"?',
      );
    });

    it("refuses a root schema that cannot accept an object, for inputs and for output", () => {
      const error = refusal(() => defineTool({ name: "demo.tool", inputSchema: { type: "string" }, handler }));
      expect(error.details).to.equal(
        'inputSchema of "demo.tool" must accept a JSON object at its root (inputs and outputs are always objects), but its "type" is "string": use "type": "object"',
      );
      const output = refusal(() =>
        defineTool({ name: "demo.tool", outputSchema: { type: ["array", "null"] }, handler }),
      );
      expect(output.details).to.contain('outputSchema of "demo.tool" must accept a JSON object at its root');
    });

    it("shows the offending value, the allowed values and the nearest one for a schema that breaks the meta-schema", () => {
      const error = refusal(() =>
        defineTool({
          name: "demo.tool",
          inputSchema: { type: "object", properties: { path: { type: "strin" }, size: { minimum: "1" } } },
          handler,
        }),
      );
      expect(error.details).to.equal(
        'inputSchema of "demo.tool" is not a valid JSON Schema (draft 2020-12): /properties/path/type is "strin": must be one of "array", "boolean", "integer", "null", "number", "object", "string": did you mean "string"?; /properties/size/minimum is "1": must be number',
      );
    });

    it("accepts the annotation keywords of draft 2020-12, formats included, and a root that may be an object", () => {
      const tool = defineTool({
        name: "demo.tool",
        inputSchema: {
          $schema: "https://json-schema.org/draft/2020-12/schema",
          title: "Inputs",
          type: ["object", "null"],
          $comment: "annotations only",
          properties: {
            email: { type: "string", format: "email", description: "where", examples: ["a@b.c"], default: "a@b.c" },
            id: { type: "string", readOnly: true, deprecated: true, contentMediaType: "text/plain" },
          },
        },
        handler,
      });
      expect(tool.spec.name).to.equal("demo.tool");
    });

    it("refuses patterns that need backtracking, and patterns that are not ECMA-262", () => {
      const define = (pattern: string) => () =>
        defineTool({ name: "demo.tool", inputSchema: { type: "object", properties: { s: { pattern } } }, handler });
      expect(refusal(define("(x)\\1")).details).to.contain('pattern "(x)\\\\1" uses the backreference "\\\\1"');
      expect(refusal(define("x(?!y)")).details).to.contain('pattern "x(?!y)" uses the negative lookahead "(?!y)"');
      expect(refusal(define("(?<=y)x")).details).to.contain('pattern "(?<=y)x" uses the lookbehind "(?<=y)"');
      expect(refusal(define("(?P<n>x)")).details).to.contain(
        'pattern "(?P<n>x)" is not a valid ECMA-262 regular expression',
      );
      expect(refusal(define("x{1001}")).details).to.contain(
        'pattern "x{1001}" cannot be evaluated by the linear-time regular expression engine',
      );
    });
  });
});

describe("compileSchema()", () => {
  it("reports each problem once, with its place, the offending value and the allowed values", () => {
    const check = compileSchema({
      type: "object",
      required: ["count"],
      properties: {
        count: { type: "integer", minimum: 0 },
        colour: { enum: ["red", "green"] },
        id: { anyOf: [{ type: "string" }, { type: "number" }] },
      },
      additionalProperties: false,
    });
    expect(check({ cuont: 1, colour: "gren", id: true })).to.deep.equal([
      '(root) misses the required property "count": is "cuont" a misspelling of it?',
      '(root) has the unknown property "cuont": did you mean "count"?',
      '/colour is "gren": must be one of "red", "green": did you mean "green"?',
      "/id is true: must be string or number",
    ]);
    expect(check({ count: -1 })).to.deep.equal(["/count is -1: must be >= 0"]);
  });

  it("cuts long values and lists at most ten problems", () => {
    const check = compileSchema({ type: "object", additionalProperties: { type: "number" } });
    const inputs = Object.fromEntries(Array.from({ length: 12 }, (_, index) => [`k${index}`, "x".repeat(100)]));
    const problems = check(inputs);
    expect(problems).to.have.length(11);
    expect(problems[0]).to.equal(`/k0 is "${"x".repeat(57)}...": must be number`);
    expect(problems[10]).to.equal("and 2 more");
  });

  it("checks a catastrophic pattern against a long input in linear time", () => {
    const check = compileSchema({ type: "object", properties: { s: { pattern: "^(a+)+$" } } });
    const started = performance.now();
    expect(check({ s: `${"a".repeat(100_000)}!` })).to.have.length(1);
    expect(check({ s: "a".repeat(100_000) })).to.deep.equal([]);
    // A backtracking engine needs seconds for 27 characters; this is 100,000.
    expect(performance.now() - started).to.be.below(2000);
  });
});

describe("loadToolModule()", () => {
  let folder: string;
  before(async () => {
    folder = await mkdtemp(path.join(tmpdir(), "toolruntime-tools-"));
  });
  after(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  for (const [label, source, message] of [
    [
      "a misspelt handler",
      'export const tool = { name: "demo.tool", handle: () => ({}) };',
      'tool "demo.tool" has the unknown key "handle": did you mean "handler"?',
    ],
    [
      "a snake_case key",
      'export const tool = { name: "demo.tool", input_schema: { type: "object" }, handler: () => ({}) };',
      'tool "demo.tool" has the unknown key "input_schema": did you mean "inputSchema"?',
    ],
  ] as const) {
    it(`refuses a plain definition with ${label}, naming the module`, async () => {
      const file = path.join(folder, `${label.replaceAll(" ", "-")}.mjs`);
      await writeFile(file, source);
      let failure: unknown;
      try {
        await loadToolModule(file);
      } catch (error) {
        failure = error;
      }
      expect((failure as Error | undefined)?.message).to.equal(`tool module ${JSON.stringify(file)}: ${message}`);
    });
  }
});
