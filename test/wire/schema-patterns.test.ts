import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { createProvider, type Provider } from "../../src/providers/create-provider.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testTools } from "../support/test-tools.js";

/** A pattern that a backtracking engine takes seconds on for `evilInput` (each extra "a" doubles it). */
const catastrophicPattern = "^(a+)+$";
const evilInput = "aaaaaaaaaaaaaaaaaaaaaaaaaaa!";

const evilInputTool = defineTool({
  name: "evil.input",
  description: "Checks inputs.text against a catastrophic pattern; returns {ok: true}.",
  inputSchema: { type: "object", properties: { text: { type: "string", pattern: catastrophicPattern } } },
  handler: () => ({ ok: true }),
});
const evilOutputTool = defineTool({
  name: "evil.output",
  description: "Returns {echo: inputs.text}; its output schema has a catastrophic pattern.",
  outputSchema: { type: "object", properties: { echo: { type: "string", pattern: catastrophicPattern } } },
  handler: (inputs) => ({ echo: inputs["text"] ?? "" }),
});
const evilKeysTool = defineTool({
  name: "evil.keys",
  description: "Accepts only keys made of a's (patternProperties with a catastrophic pattern).",
  inputSchema: {
    type: "object",
    patternProperties: { [catastrophicPattern]: { type: "string" } },
    additionalProperties: false,
  },
  handler: () => ({ ok: true }),
});

function resultOf(events: RunEvent[]): ToolResult {
  const last = events.at(-1)?.event;
  if (last?.case !== "completed" || !last.value.result) throw new Error("the run ended without a result");
  return last.value.result;
}

/** Runs `toolName` to the end over RunTool and returns its result and the client-side duration. */
async function timedRun(client: ClientStack, toolName: string, inputs: JsonObject) {
  const started = performance.now();
  const events = (await collect(client.runner.runTool({ toolName, inputs }))).map((r) => r.event as RunEvent);
  return { result: resultOf(events), elapsedMs: performance.now() - started };
}

/**
 * Calls `probe` back to back while `work` runs (and at least `minProbes` times), and returns the
 * longest probe latency: a blocked event loop shows as one long probe.
 */
async function maxLatencyWhile(work: Promise<unknown>, probe: () => Promise<unknown>, minProbes: number) {
  let done = false;
  const finished = work.finally(() => (done = true));
  let longest = 0;
  for (let count = 0; count < 10_000 && (!done || count < minProbes); count++) {
    const started = performance.now();
    await probe();
    longest = Math.max(longest, performance.now() - started);
  }
  await finished;
  return longest;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

describe("Schema patterns run on a linear-time engine", () => {
  let server: RunningServer;
  let stacks: ClientStack[];
  let provider: Provider;

  before(async () => {
    server = await startTestServer({
      tools: [...builtinTools, ...testTools, evilInputTool, evilOutputTool, evilKeysTool],
    });
    stacks = clientStackNames.map((name) => createClientStack(name, server));
    provider = createProvider({
      address: server.grpcAddress,
      providerName: "remote",
      tools: [
        defineTool({
          name: "remote.evil",
          description: "A provider's tool whose input schema has a catastrophic pattern.",
          inputSchema: { type: "object", properties: { text: { type: "string", pattern: catastrophicPattern } } },
          handler: () => ({ ok: true }),
        }),
      ],
    });
    await provider.connected;
  });
  after(async () => {
    provider.close();
    for (const stack of stacks) stack.close();
    await server.close(0);
  });

  for (const [index, name] of clientStackNames.entries()) {
    describe(`over ${name}`, () => {
      const client = () => stacks[index] as ClientStack;

      it("fails an in-process tool's run on a catastrophic pattern at once with the precise InputValidationError", async () => {
        const { result, elapsedMs } = await timedRun(client(), "evil.input", { text: evilInput });
        expect(result.success).to.equal(false);
        expect(result.error?.errorType).to.equal("InputValidationError");
        expect(result.error?.details).to.equal(
          `inputs do not match the input schema of "evil.input": /text is "${evilInput}": must match pattern "${catastrophicPattern}"`,
        );
        expect(elapsedMs).to.be.below(2000);
        const passing = await timedRun(client(), "evil.input", { text: "a".repeat(100) });
        expect(passing.result.success).to.equal(true);
      });

      it("checks output against a catastrophic pattern at once with the precise OutputValidationError", async () => {
        const { result, elapsedMs } = await timedRun(client(), "evil.output", { text: evilInput });
        expect(result.success).to.equal(false);
        expect(result.error?.errorType).to.equal("OutputValidationError");
        expect(result.error?.details).to.equal(
          `output of "evil.output" does not match its output schema: /echo is "${evilInput}": must match pattern "${catastrophicPattern}"`,
        );
        expect(elapsedMs).to.be.below(2000);
        expect((await timedRun(client(), "evil.output", { text: "aaaa" })).result.output).to.deep.equal({
          echo: "aaaa",
        });
      });

      it("matches property names against a catastrophic patternProperties pattern at once", async () => {
        const { result, elapsedMs } = await timedRun(client(), "evil.keys", { [evilInput]: "x", aaa: "y" });
        expect(result.error?.errorType).to.equal("InputValidationError");
        expect(result.error?.details).to.equal(
          `inputs do not match the input schema of "evil.keys": (root) has the unknown property "${evilInput}": remove it`,
        );
        expect(elapsedMs).to.be.below(2000);
      });

      it("fails a provider tool's run on a catastrophic pattern at once (its hello's schema is compiled the same way)", async () => {
        const { result, elapsedMs } = await timedRun(client(), "remote.evil", { text: evilInput });
        expect(result.error?.errorType).to.equal("InputValidationError");
        expect(result.error?.details).to.equal(
          `inputs do not match the input schema of "remote.evil": /text is "${evilInput}": must match pattern "${catastrophicPattern}"`,
        );
        expect(elapsedMs).to.be.below(2000);
      });

      it("registers a catastrophic pattern over RegisterTool, even one that matches a property name, in no time", async () => {
        const toolName = `${uniqueName("wire")}.evil`;
        const started = performance.now();
        const registered = await client().registry.registerTool({
          spec: {
            name: toolName,
            inputSchema: {
              type: "object",
              properties: { text: { type: "string", pattern: catastrophicPattern }, [evilInput]: {} },
              patternProperties: { [catastrophicPattern]: { type: "string" } },
            },
          },
        });
        expect(registered.spec?.name).to.equal(toolName);
        expect(performance.now() - started).to.be.below(2000);
      });

      for (const [label, pattern, why] of [
        ["a backreference", "^(a)\\1$", 'uses the backreference "\\\\1"'],
        ["a named backreference", "^(?<x>a)\\k<x>$", 'uses the backreference "\\\\k<x>"'],
        ["a lookahead", "^(?=a)a+$", 'uses the lookahead "(?=a)"'],
        ["a negative lookbehind", "(?<!b)a", 'uses the negative lookbehind "(?<!b)"'],
      ] as const) {
        it(`refuses a pattern with ${label} at registration with INVALID_ARGUMENT naming it`, async () => {
          const toolName = `${uniqueName("wire")}.refused`;
          const error = await expectToolError(
            client().registry.registerTool({
              spec: { name: toolName, inputSchema: { type: "object", properties: { s: { pattern } } } },
            }),
            Code.InvalidArgument,
            "RegistrationError",
          );
          expect(error.details).to.equal(
            `input_schema of "${toolName}" is not a valid JSON Schema (draft 2020-12): pattern ${JSON.stringify(pattern)} ${why}, which the linear-time regular expression engine cannot evaluate: rewrite it without backreferences or lookaround`,
          );
          expect(error.toolName).to.equal(toolName);
        });
      }

      it("refuses an output schema pattern the linear engine cannot evaluate", async () => {
        const toolName = `${uniqueName("wire")}.refused`;
        await expectToolError(
          client().registry.registerTool({
            spec: { name: toolName, outputSchema: { type: "object", patternProperties: { "(a)\\1": {} } } },
          }),
          Code.InvalidArgument,
          "RegistrationError",
          `output_schema of "${toolName}" is not a valid JSON Schema (draft 2020-12): pattern "(a)\\\\1" uses the backreference`,
        );
      });
    });
  }

  it("costs the server's other callers under 50 ms of added latency while catastrophic inputs are checked", async function () {
    this.timeout(60_000);
    const [grpc, connect] = [stacks[0] as ClientStack, stacks[2] as ClientStack];
    // Probes on both ports: a blocked event loop stalls both.
    const probe = () =>
      Promise.all([grpc.registry.getTool({ name: "evil.input" }), connect.registry.getTool({ name: "evil.input" })]);
    // The same four failing runs, one per tool and client stack, with the text a backtracking
    // engine stalls on or with a short one: the two phases differ only in what the patterns see.
    const failingRuns = (text: string) =>
      Promise.all([
        timedRun(stacks[0] as ClientStack, "evil.input", { text }),
        timedRun(stacks[1] as ClientStack, "evil.output", { text }),
        timedRun(stacks[2] as ClientStack, "evil.keys", { [text]: "x" }),
        timedRun(stacks[3] as ClientStack, "remote.evil", { text }),
      ]);
    await probe();
    // Rounds interleave the baseline and the catastrophic inputs, in alternating order; the median
    // of the rounds' differences ignores rounds disturbed by other load on the machine, while a
    // stalled event loop would add seconds to every round.
    const added: number[] = [];
    for (let round = 0; round < 5; round++) {
      const phases: Record<string, number> = {};
      for (const phase of round % 2 === 0 ? ["baseline", "evil"] : ["evil", "baseline"]) {
        const runs = failingRuns(phase === "evil" ? evilInput : "b!");
        phases[phase] = await maxLatencyWhile(runs, probe, 10);
        for (const { result } of await runs) expect(result.success).to.equal(false);
      }
      added.push((phases["evil"] ?? 0) - (phases["baseline"] ?? 0));
    }
    expect(median(added), `added latency per round: ${added.map((ms) => ms.toFixed(1)).join(", ")} ms`).to.be.below(50);
  });
});
