import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { once } from "node:events";
import type { JsonObject } from "@bufbuild/protobuf";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

for (const stackName of clientStackNames) {
  describe(`RunnerService over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer();
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    /** Activates `toolName` in a fresh runner and executes it once. */
    async function run(toolName: string, inputs: JsonObject = {}, timeoutMs = 0) {
      const runner = uniqueName("r");
      await client.runner.activateTool({ runner, toolName });
      const response = await client.runner.executeTool({ runner, toolName, inputs, timeoutMs });
      const result = response.result;
      if (!result) throw new Error("no result");
      return { response, result };
    }

    describe("DiscoverTools", () => {
      it("lists the default registry's tools, or another registry's when named", async () => {
        const builtin = await client.runner.discoverTools({ namespace: "builtin" });
        expect(builtin.tools.map((tool) => tool.name)).to.include.members(["builtin.echo", "builtin.countdown"]);
        const registry = uniqueName("alt");
        const name = `${uniqueName("staged")}.tool`;
        await client.registry.registerTool({ registry, spec: { name } });
        const alternate = await client.runner.discoverTools({ registry });
        expect(alternate.tools.map((tool) => tool.name)).to.deep.equal([name]);
        const fromDefault = await client.runner.discoverTools({ namespace: name.split(".")[0] ?? "" });
        expect(fromDefault.tools).to.have.length(0);
        await expectToolError(client.runner.discoverTools({ registry: "missing" }), Code.NotFound, "NotFoundError");
      });
    });

    describe("ActivateTool and DeactivateTool", () => {
      it("activates idempotently per runner and reports whether a tool was active", async () => {
        const runner = uniqueName("act");
        const first = await client.runner.activateTool({ runner, toolName: "builtin.echo" });
        expect(first.alreadyActive).to.equal(false);
        expect(first.spec?.name).to.equal("builtin.echo");
        expect((await client.runner.activateTool({ runner, toolName: "builtin.echo" })).alreadyActive).to.equal(true);
        expect((await client.runner.deactivateTool({ runner, toolName: "builtin.echo" })).wasActive).to.equal(true);
        expect((await client.runner.deactivateTool({ runner, toolName: "builtin.echo" })).wasActive).to.equal(false);
      });

      it("keeps runners apart: activation in one is not activation in another", async () => {
        const one = uniqueName("one");
        await client.runner.activateTool({ runner: one, toolName: "builtin.echo" });
        await expectToolError(
          client.runner.executeTool({ runner: uniqueName("two"), toolName: "builtin.echo" }),
          Code.FailedPrecondition,
          "NotActiveError",
        );
      });

      it("answers NOT_FOUND with an ActivationError for an unknown tool", async () => {
        const error = await expectToolError(
          client.runner.activateTool({ toolName: "no.such_tool" }),
          Code.NotFound,
          "ActivationError",
          '"no.such_tool"',
        );
        expect(error.toolName).to.equal("no.such_tool");
      });

      it("rejects invalid tool and runner names with INVALID_ARGUMENT", async () => {
        await expectToolError(
          client.runner.activateTool({ toolName: "__proto__" }),
          Code.InvalidArgument,
          "InvalidRequestError",
        );
        await expectToolError(
          client.runner.activateTool({ runner: "Bad Runner", toolName: "builtin.echo" }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "runner name",
        );
        await expectToolError(
          client.runner.deactivateTool({ toolName: "" }),
          Code.InvalidArgument,
          "InvalidRequestError",
        );
      });

      it("deactivates a tool everywhere when it is removed from the registry", async () => {
        const name = `${uniqueName("gone")}.tool`;
        const runner = uniqueName("r");
        await client.registry.registerTool({ spec: { name } });
        await client.runner.activateTool({ runner, toolName: name });
        await client.registry.removeTool({ name });
        expect((await client.runner.deactivateTool({ runner, toolName: name })).wasActive).to.equal(false);
      });
    });

    describe("ExecuteTool", () => {
      it("runs an active tool and returns its output, duration and metadata", async () => {
        const inputs = { text: "hi", list: [1, "two", null, true], nested: { deep: { er: 3.5 } } };
        const startedAt = performance.now();
        const { response, result } = await run("builtin.echo", inputs);
        const callMs = performance.now() - startedAt;
        expect(result.success).to.equal(true);
        expect(result.output).to.deep.equal({ echo: inputs });
        expect(result.error).to.equal(undefined);
        // The run took no longer than the calls around it, measured here.
        expect(result.durationMs).to.be.within(0, Math.ceil(callMs));
        expect(result.metadata?.["execution_id"]).to.equal(response.executionId);
        expect(result.metadata?.["tool_name"]).to.equal("builtin.echo");
        expect(result.metadata?.["capabilities"]).to.deep.include({ read_only: true, writes: false });
      });

      it("carries the caller's W3C trace id into the result's metadata", async () => {
        const runner = uniqueName("trace");
        const traceId = "0af7651916cd43dd8448eb211c80319c";
        await client.runner.activateTool({ runner, toolName: "builtin.echo" });
        const { result } = await client.runner.executeTool(
          { runner, toolName: "builtin.echo" },
          { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } },
        );
        expect(result?.metadata?.["trace_id"]).to.equal(traceId);
      });

      it("requires activation: FAILED_PRECONDITION with a NotActiveError", async () => {
        await expectToolError(
          client.runner.executeTool({ runner: uniqueName("idle"), toolName: "builtin.echo" }),
          Code.FailedPrecondition,
          "NotActiveError",
          "call ActivateTool first",
        );
      });

      it("answers NOT_FOUND for an unknown tool", async () => {
        await expectToolError(client.runner.executeTool({ toolName: "no.such_tool" }), Code.NotFound, "NotFoundError");
      });

      it("answers FAILED_PRECONDITION naming the missing handler for a tool registered over the wire", async () => {
        const name = `${uniqueName("nohandler")}.tool`;
        const runner = uniqueName("r");
        await client.registry.registerTool({ spec: { name } });
        const listed = await client.registry.listTools({ namespace: name.split(".")[0] ?? "" });
        expect(listed.tools[0]?.hasHandler).to.equal(false);
        await client.runner.activateTool({ runner, toolName: name });
        await expectToolError(
          client.runner.executeTool({ runner, toolName: name }),
          Code.FailedPrecondition,
          "HandlerMissingError",
          "has no handler",
        );
      });

      it("rejects a timeout over one day with INVALID_ARGUMENT", async () => {
        await expectToolError(
          client.runner.executeTool({ toolName: "builtin.echo", timeoutMs: 86_400_001 }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "timeout_ms",
        );
      });

      const failures: [string, string, JsonObject, string, string][] = [
        ["a thrown string", "test.throw_string", {}, "HandlerError", 'threw a string: "boom"'],
        ["a thrown Error", "test.throw_error", { message: "disk on fire" }, "HandlerError", "TypeError: disk on fire"],
        ["a rejection with a plain object", "test.reject_object", {}, "HandlerError", '{"code":42}'],
        [
          "output with a BigInt",
          "test.bad_output",
          { kind: "bigint" },
          "OutputValidationError",
          "output.value is a BigInt",
        ],
        [
          "output with a cycle",
          "test.bad_output",
          { kind: "cycle" },
          "OutputValidationError",
          "output.self is a reference to one of its ancestors",
        ],
        ["undefined output", "test.bad_output", { kind: "undefined" }, "OutputValidationError", "output is undefined"],
        [
          "output with a function",
          "test.bad_output",
          { kind: "function" },
          "OutputValidationError",
          "output.value is a function",
        ],
        ["output with NaN", "test.bad_output", { kind: "nan" }, "OutputValidationError", "output.value is NaN"],
        [
          "output whose prototype cannot be read (a proxy)",
          "test.bad_output",
          { kind: "proto_trap" },
          "OutputValidationError",
          "output could not be read: Error: the prototype cannot be read",
        ],
        [
          "a promise of output whose prototype cannot be read",
          "test.bad_output",
          { kind: "proto_trap_async" },
          "OutputValidationError",
          "output could not be read: Error: the prototype cannot be read",
        ],
        [
          "output whose then cannot be read",
          "test.bad_output",
          { kind: "then_getter" },
          "OutputValidationError",
          "output could not be read: Error: then cannot be read",
        ],
        [
          "a revoked proxy as output",
          "test.bad_output",
          { kind: "revoked" },
          "OutputValidationError",
          "output could not be read",
        ],
        [
          "output within the JSON limit but over the message limit once encoded",
          "test.bad_output",
          { kind: "zeros" },
          "OutputValidationError",
          "once encoded as protobuf",
        ],
        [
          "a thrown value whose prototype cannot be read",
          "test.throw_unreadable",
          {},
          "HandlerError",
          "threw a value that cannot be described",
        ],
        [
          "output with Infinity",
          "test.bad_output",
          { kind: "infinity" },
          "OutputValidationError",
          "output.value is Infinity",
        ],
        ["output with a Date", "test.bad_output", { kind: "date" }, "OutputValidationError", "output.value is a Date"],
        [
          "output with a symbol",
          "test.bad_output",
          { kind: "symbol" },
          "OutputValidationError",
          "output.value is a symbol",
        ],
        ["a string as output", "test.bad_output", { kind: "string" }, "OutputValidationError", "output is a string"],
        [
          "output over the size limit",
          "test.bad_output",
          { kind: "huge" },
          "OutputValidationError",
          "larger than the limit",
        ],
        [
          "inputs that break the input schema",
          "test.schema",
          { count: -1 },
          "InputValidationError",
          "/count is -1: must be >= 0",
        ],
        [
          "output that breaks the output schema",
          "test.schema",
          { count: 1, reply: { total: "x" } },
          "OutputValidationError",
          '/total is "x": must be number',
        ],
        ["inputs nested too deeply", "builtin.echo", nest(70), "InputValidationError", "nested deeper than 64 levels"],
      ];
      for (const [label, toolName, inputs, errorType, fragment] of failures) {
        it(`turns ${label} into success=false with ${errorType}`, async () => {
          const { result } = await run(toolName, inputs);
          expect(result.success).to.equal(false);
          expect(result.output).to.deep.equal({});
          expect(result.error?.errorType).to.equal(errorType);
          expect(result.error?.toolName).to.equal(toolName);
          expect(result.error?.details).to.contain(fragment);
        });
      }

      it("cuts the message of a thrown Error of megabytes, so that the result fits a message", async () => {
        const { result } = await run("test.throw_error", { repeat: 3_000_000 });
        expect(result.success).to.equal(false);
        expect(result.error?.errorType).to.equal("HandlerError");
        expect(result.error?.details).to.match(/TypeError: x+\.\.\.$/);
        expect(result.error?.details.length).to.be.below(1100);
      });

      it("ends a synchronous handler that returns after its timeout with a TimeoutError, its output discarded", async () => {
        const { result } = await run("test.busy", { ms: 150 }, 50);
        expect(result.success).to.equal(false);
        expect(result.error?.errorType).to.equal("TimeoutError");
        expect(result.error?.details).to.contain("timed out after 50 ms");
        expect(result.output).to.deep.equal({});
        expect(result.durationMs).to.be.at.least(150);
      });

      it("ends a run whose handler never settles and ignores its signal with a TimeoutError", async () => {
        const { result } = await run("test.hang");
        expect(result.success).to.equal(false);
        expect(result.error?.errorType).to.equal("TimeoutError");
        expect(result.error?.details).to.contain("timed out after 200 ms");
        expect(result.durationMs).to.be.at.least(150);
      });

      it("honours a per-call timeout and discards the late result of a handler that ignores it", async () => {
        const executionIdOfLate = once(testToolEvents, "late");
        const { response, result } = await run("test.late", { ms: 300 }, 50);
        expect(result.success).to.equal(false);
        expect(result.error?.errorType).to.equal("TimeoutError");
        expect(result.metadata?.["timeout_ms"]).to.equal(50);
        // The handler does finish later; what it returns then changes nothing.
        const [lateId] = (await executionIdOfLate) as [string];
        expect(lateId).to.equal(response.executionId);
        expect(result.output).to.deep.equal({});
      });

      it("cancels the handler when the client cancels the call", async () => {
        const runner = uniqueName("cancel");
        await client.runner.activateTool({ runner, toolName: "test.wait_for_cancel" });
        const abort = new AbortController();
        const waiting = once(testToolEvents, "waiting");
        const aborted = once(testToolEvents, "aborted");
        const call = client.runner.executeTool({ runner, toolName: "test.wait_for_cancel" }, { signal: abort.signal });
        const failure = call.then(
          () => undefined,
          (error: unknown) => error,
        );
        // Abort only once the handler runs, so that it is the handler that sees the cancellation.
        await waiting;
        abort.abort();
        const [, reason] = (await aborted) as [string, string];
        expect(reason).to.contain("cancelled");
        expect(ConnectError.from(await failure).code).to.equal(Code.Canceled);
        expect((await client.registry.getTool({ name: "builtin.echo" })).spec?.name).to.equal("builtin.echo");
      });

      it("ends the run at the RPC deadline: DEADLINE_EXCEEDED for the client, an aborted signal for the handler", async () => {
        const runner = uniqueName("deadline");
        await client.runner.activateTool({ runner, toolName: "test.wait_for_cancel" });
        const aborted = once(testToolEvents, "aborted");
        await expectToolError(
          client.runner.executeTool({ runner, toolName: "test.wait_for_cancel" }, { timeoutMs: 150 }),
          Code.DeadlineExceeded,
          "TimeoutError",
        ).catch((error: unknown) => {
          // Some stacks end the call on the client side at the deadline, before any trailer arrives.
          expect(
            ConnectError.from(error).code === Code.DeadlineExceeded || String(error).includes("ToolError"),
          ).to.equal(true);
        });
        await aborted;
      });
    });

    if (stackName === "grpc-js") {
      it("refuses inputs nested past the decoder's limit with INVALID_ARGUMENT and keeps serving", async () => {
        await expectToolError(
          client.runner.executeTool({ toolName: "builtin.echo", inputs: nest(600) }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "maximum recursion depth",
        );
        expect((await client.registry.getTool({ name: "builtin.echo" })).spec?.name).to.equal("builtin.echo");
      });
    }
  });
}

function nest(depth: number): JsonObject {
  let value: JsonObject = { leaf: true };
  for (let level = 0; level < depth; level++) value = { inner: value };
  return value;
}
