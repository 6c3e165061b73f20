import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { createProvider, type Provider } from "../../src/providers/create-provider.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { doublingChain, hostileTools } from "../support/hostile-tools.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

/** Schemas whose check of one value could explode: each is refused when it is registered. */
const explosive: [string, JsonObject, string][] = [
  [
    "an anyOf $ref chain of 24 levels, each referring twice to the next",
    {
      type: "object",
      properties: { x: { $ref: "#/$defs/l0" } },
      $defs: doublingChain("anyOf", 24, { type: "string" }),
    },
    'checking one value at depth 1 can take 67,108,862 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "anyOf" at "#/$defs/l0" applies subschemas that reach the same schemas again, and so on down the chain: refer to each schema from one place rather than from several subschemas',
  ],
  [
    "an allOf $ref chain of depth 32",
    {
      type: "object",
      properties: { x: { $ref: "#/$defs/l0" } },
      $defs: doublingChain("allOf", 32, { type: "integer" }),
    },
    'checking one value at depth 1 can take 17,179,869,182 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "allOf" at "#/$defs/l0" applies subschemas that reach the same schemas again, and so on down the chain: refer to each schema from one place rather than from several subschemas',
  ],
  [
    "a recursive anyOf whose two branches both descend into it",
    {
      type: "object",
      properties: { t: { $ref: "#/$defs/t" } },
      $defs: {
        t: {
          anyOf: [
            { type: "array", items: { $ref: "#/$defs/t" } },
            { type: "array", maxItems: 1, items: { $ref: "#/$defs/t" } },
          ],
        },
      },
    },
    'checking one value at depth 12 can take 10,240 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "anyOf" at "#/$defs/t" applies 2 subschemas that each work through the parts of the value, level after level: let one of them look into the value, or merge them',
  ],
  [
    "2,000 patternProperties",
    {
      type: "object",
      patternProperties: Object.fromEntries(Array.from({ length: 2000 }, (_, index) => [`^p${index}_`, {}])),
    },
    'its "patternProperties" at "#" has 2,000 patterns, more than the 64 allowed: every property name is tested against each of them, so merge them into fewer patterns (an alternation such as "^(?:a|b)$" is one test)',
  ],
];

const integers = (count: number, from = 0): number[] => Array.from({ length: count }, (_, index) => from + index);

/** Hostile runs, and what each must answer. */
const hostileRuns: [string, JsonObject, { success: boolean; details?: string }][] = [
  [
    "hostile.contains",
    { a: integers(20_000) },
    {
      success: false,
      details:
        'inputs of "hostile.contains" could not be checked against its input schema: the check takes more work than is allowed for 108,897 bytes (535,588 units, about one per subschema applied to one value, within 359 ms): simplify the schema, or make the value smaller',
    },
  ],
  [
    "hostile.enum",
    { a: integers(10_000, 10_000) },
    {
      success: false,
      details:
        'inputs do not match the input schema of "hostile.enum": /a/0 is 10000: must be one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 or 9,980 more; and more',
    },
  ],
  ["hostile.unique", { a: integers(50_000) }, { success: true }],
  [
    "hostile.unique",
    { a: [...integers(20_000).map((id) => ({ id, name: `n${id}` })), { name: "n5", id: 5 }] },
    {
      success: false,
      details:
        'inputs do not match the input schema of "hostile.unique": /a is an array: must NOT have duplicate items (items ## 5 and 20000 are identical)',
    },
  ],
  [
    "hostile.nested",
    { a: integers(5_000).map(() => 1) },
    {
      success: false,
      details:
        'inputs do not match the input schema of "hostile.nested": /a is an array: must contain at least 1 valid item(s)',
    },
  ],
];

function resultOf(events: RunEvent[]): ToolResult {
  const last = events.at(-1)?.event;
  if (last?.case !== "completed" || !last.value.result) throw new Error("the run ended without a result");
  return last.value.result;
}

describe("Bounded validation over the wire", function () {
  this.timeout(30_000);
  let server: RunningServer;
  let registering: ClientStack;
  let running: ClientStack;
  let bystander: ClientStack;
  let provider: Provider;

  before(async () => {
    server = await startTestServer();
    registering = createClientStack("connect-binary-http2", server);
    running = createClientStack("grpc-js", server);
    bystander = createClientStack("connect-json-http1", server);
    provider = createProvider({ address: server.grpcAddress, providerName: "hostile", tools: hostileTools });
    await provider.connected;
  });
  after(async () => {
    provider.close();
    for (const stack of [registering, running, bystander]) stack.close();
    await server.close(0);
  });

  it("refuses explosive schemas over RegisterTool, runs hostile inputs to their answers, and keeps /healthz and other callers served throughout", async () => {
    let hostileDone = false;
    const work = (async () => {
      try {
        for (const [, schema, message] of explosive) {
          const name = `${uniqueName("wire")}.explosive`;
          const error = await expectToolError(
            registering.registry.registerTool({ spec: { name, inputSchema: schema } }),
            Code.InvalidArgument,
            "RegistrationError",
          );
          expect(error.details).to.equal(`input_schema of "${name}" is too costly to check: ${message}`);
          await expectToolError(
            collect(running.runner.runTool({ toolName: name, inputs: { x: 1 } })),
            Code.NotFound,
            "NotFoundError",
          );
        }
        // Twice each, at once: the second runs against a compiled check.
        const runs = [...hostileRuns, ...hostileRuns].map(async ([toolName, inputs, expected]) => {
          const result = resultOf(
            (await collect(running.runner.runTool({ toolName, inputs }))).map((r) => r.event as RunEvent),
          );
          expect(result.success, `${toolName}: ${result.error?.details}`).to.equal(expected.success);
          if (!expected.success) {
            expect(result.error?.errorType).to.equal("InputValidationError");
            expect(result.error?.details).to.equal(expected.details);
          }
        });
        await Promise.all(runs);
      } finally {
        hostileDone = true;
      }
    })();

    const probes: number[] = [];
    const served: number[] = [];
    const probing = (async () => {
      while (!hostileDone) {
        const started = performance.now();
        const response = await fetch(`${server.httpUrl}/healthz`);
        expect(response.status).to.equal(200);
        expect(await response.text()).to.equal("ok\n");
        probes.push(performance.now() - started);
      }
    })();
    const serving = (async () => {
      while (!hostileDone) {
        const started = performance.now();
        const events = await collect(
          bystander.runner.runTool({ toolName: "builtin.echo", inputs: { n: served.length } }),
        );
        expect(resultOf(events.map((r) => r.event as RunEvent)).output).to.deep.equal({ echo: { n: served.length } });
        served.push(performance.now() - started);
      }
    })();

    await Promise.all([work, probing, serving]);
    expect(probes.length, "probes answered while the hostile work ran").to.be.above(5);
    expect(Math.max(...probes), "slowest /healthz probe, ms").to.be.below(1000);
    expect(served.length, "other callers' runs served meanwhile").to.be.above(5);
    expect(Math.max(...served), "slowest run of another caller, ms").to.be.below(2000);
  });
});
