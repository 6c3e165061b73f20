import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { EventEmitter, once } from "node:events";
import http2 from "node:http2";
import { Writable } from "node:stream";
import { pino } from "pino";
import { ExecutionState, type Execution, type ExecutionOptionsSchema } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import type { RunningServer, ServerOptions } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents, testTools } from "../support/test-tools.js";

const twoTo31 = 2 ** 31;
const maximumText = "the maximum is 86400000 ms (one day)";

/** The id of the next run of test.wait_for_cancel, once its handler is waiting. */
function nextWaitingRun(): Promise<string> {
  return new Promise((resolve) => testToolEvents.once("waiting", (executionId: string) => resolve(executionId)));
}

/** Calls the server logged as ended, by "Service/Method", with their code names. */
function callLog(): { logger: pino.Logger; ended: EventEmitter } {
  const ended = new EventEmitter();
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) {
        if (line === "") continue;
        const record = JSON.parse(line) as { msg?: string; rpc?: string; code?: string };
        if (record.msg === "call" && record.rpc) ended.emit(record.rpc, record.code);
      }
      done();
    },
  });
  return { logger: pino({ level: "debug" }, stream), ended };
}

/** A checkpointable tool whose rollback waits until the test lets it go. */
const rollbackGate = { release: (): void => undefined };
const slowRollbackTool = defineTool({
  name: "test.slow_rollback",
  description: "Checkpointable; waits until cancelled, and its rollback waits for the test.",
  capabilities: { checkpointable: true, writes: true },
  hooks: {
    checkpoint: () => ({}),
    rollback: () => new Promise<void>((resolve) => (rollbackGate.release = resolve)),
  },
  handler: (_inputs, context) =>
    new Promise((_resolve, reject) => {
      context.reportProgress({ message: "waiting" });
      context.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true });
    }),
});

const resultOf = (events: RunEvent[]): ToolResult => {
  const last = events.at(-1)?.event;
  if (last?.case !== "completed" || !last.value.result) throw new Error(`no completed event: ${last?.case}`);
  return last.value.result;
};

for (const stackName of clientStackNames) {
  describe(`run semantics over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;
    const log = callLog();

    before(async () => {
      server = await startTestServer({ logger: log.logger, connection: { maxMessageBytes: 512 * 1024 } });
      client = createClientStack(stackName, server);
      await client.runner.activateTool({ toolName: "builtin.echo" });
      await client.runner.activateTool({ toolName: "test.wait_for_cancel" });
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    const finalRecord = async (executionId: string): Promise<Execution> => {
      await collect(client.executions.watchExecution({ executionId }));
      const { execution } = await client.executions.getExecution({ executionId });
      return execution as Execution;
    };

    describe("durations", () => {
      const fields: [string, MessageInitShape<typeof ExecutionOptionsSchema>][] = [
        ["options.queue_timeout_ms", { queueTimeoutMs: twoTo31 }],
        ["options.heartbeat_timeout_ms", { heartbeatTimeoutMs: twoTo31 }],
        ["options.approval_timeout_ms", { approvalTimeoutMs: twoTo31 }],
        ["options.retry_policy.initial_backoff_ms", { retryPolicy: { maxAttempts: 3, initialBackoffMs: twoTo31 } }],
        ["options.retry_policy.max_backoff_ms", { retryPolicy: { maxAttempts: 3, maxBackoffMs: twoTo31 } }],
      ];
      for (const [field, options] of fields) {
        it(`rejects ${field} of 2^31 ms with INVALID_ARGUMENT stating the maximum, on every RPC that starts a run`, async () => {
          const message = `${field} ${twoTo31} is out of range: ${maximumText}`;
          await expectToolError(
            client.executions.startExecution({ toolName: "builtin.echo", options }),
            Code.InvalidArgument,
            "InvalidRequestError",
            message,
          );
          await expectToolError(
            client.runner.executeTool({ toolName: "builtin.echo", options }),
            Code.InvalidArgument,
            "InvalidRequestError",
            message,
          );
          await expectToolError(
            collect(client.runner.runTool({ toolName: "builtin.echo", options })),
            Code.InvalidArgument,
            "InvalidRequestError",
            message,
          );
        });
      }

      it("rejects timeout_ms of 2^31 ms with INVALID_ARGUMENT stating the maximum", async () => {
        const message = `timeout_ms ${twoTo31} is out of range: ${maximumText}`;
        await expectToolError(
          client.executions.startExecution({ toolName: "builtin.echo", timeoutMs: twoTo31 }),
          Code.InvalidArgument,
          "InvalidRequestError",
          message,
        );
        await expectToolError(
          client.runner.executeTool({ toolName: "builtin.echo", timeoutMs: twoTo31 }),
          Code.InvalidArgument,
          "InvalidRequestError",
          message,
        );
        await expectToolError(
          collect(client.runner.runTool({ toolName: "builtin.echo", timeoutMs: twoTo31 })),
          Code.InvalidArgument,
          "InvalidRequestError",
          message,
        );
      });

      it("rejects a spec's timeouts of 2^31 ms at registration", async () => {
        for (const key of ["defaultTimeoutMs", "maxTimeoutMs"] as const) {
          await expectToolError(
            client.registry.registerTool({ spec: { name: `${uniqueName("d")}.tool`, [key]: twoTo31 } }),
            Code.InvalidArgument,
            "RegistrationError",
            "the limit is 86400000 (one day)",
          );
        }
      });

      it("honours every duration at the maximum: the run is not cut short", async () => {
        const day = 86_400_000;
        const { result } = await client.runner.executeTool({
          toolName: "builtin.echo",
          inputs: { at: "max" },
          timeoutMs: day,
          options: {
            queueTimeoutMs: day,
            heartbeatTimeoutMs: day,
            approvalTimeoutMs: day,
            retryPolicy: { maxAttempts: 2, initialBackoffMs: day, maxBackoffMs: day },
          },
        });
        expect(result?.success, result?.error?.details).to.equal(true);
        expect(result?.output).to.deep.equal({ echo: { at: "max" } });
      });
    });

    describe("listings within the message limit", () => {
      it("lists runs with outputs larger than the message limit, leaving the outputs out", async () => {
        // Each output is 300 KiB; two of them exceed the 512 KiB limit of this server.
        const big = "x".repeat(300 * 1024);
        const ids: string[] = [];
        for (let index = 0; index < 2; index++) {
          const { executionId, result } = await client.runner.executeTool({
            toolName: "builtin.echo",
            inputs: { big, index },
          });
          expect(result?.success).to.equal(true);
          ids.push(executionId);
        }
        const { executions } = await client.executions.listExecutions({ toolName: "builtin.echo" });
        const listed = executions.filter((execution) => ids.includes(execution.executionId));
        expect(listed).to.have.length(2);
        for (const execution of listed) {
          expect(execution.outputOmitted).to.equal(true);
          expect(execution.result?.output).to.equal(undefined);
          expect(execution.result?.success).to.equal(true);
        }
        const { execution } = await client.executions.getExecution({ executionId: ids[0] as string });
        expect(execution?.outputOmitted).to.equal(false);
        expect(execution?.result?.output).to.deep.equal({ echo: { big, index: 0 } });
      });

      it("returns a run's inputs from GetExecution only when include_inputs asks for them", async () => {
        const inputs = { note: uniqueName("inputs") };
        const { executionId } = await client.runner.executeTool({ toolName: "builtin.echo", inputs });
        const plain = await client.executions.getExecution({ executionId });
        expect(plain.inputs).to.equal(undefined);
        const withInputs = await client.executions.getExecution({ executionId, includeInputs: true });
        expect(withInputs.inputs).to.deep.equal(inputs);
        expect(withInputs.execution?.executionId).to.equal(executionId);
      });

      it("cuts a page of runs short by bytes and continues it with the next page token", async () => {
        // 12 outputs of 50 KiB (each under the 64 KiB listing limit) are 600 KiB: over one page.
        const tool = "builtin.echo";
        const ids = new Set<string>();
        const tag = uniqueName("page");
        for (let index = 0; index < 12; index++) {
          const { executionId } = await client.runner.executeTool({
            toolName: tool,
            inputs: { tag, index, fill: "y".repeat(50 * 1024) },
          });
          ids.add(executionId);
        }
        const seen: Execution[] = [];
        let pageToken = "";
        let pages = 0;
        do {
          const page = await client.executions.listExecutions({ toolName: tool, pageToken, pageSize: 1000 });
          seen.push(...page.executions);
          pageToken = page.nextPageToken;
          pages += 1;
        } while (pageToken !== "" && pages < 20);
        expect(pages).to.be.greaterThan(1);
        const ours = seen.filter((execution) => ids.has(execution.executionId));
        expect(ours).to.have.length(12);
        expect(ours.every((execution) => execution.outputOmitted === false && execution.result?.output)).to.equal(true);
        expect(new Set(seen.map((execution) => execution.executionId)).size).to.equal(seen.length);
        // A token only as it was written: Buffer would skip the characters that are not base64url.
        const first = await client.executions.listExecutions({ toolName: tool, pageSize: 1000 });
        await expectToolError(
          client.executions.listExecutions({ toolName: tool, pageToken: `${first.nextPageToken}!!` }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "page_token is invalid",
        );
      });

      it("cuts pages of ListTools and DiscoverTools short by bytes", async () => {
        const namespace = uniqueName("big");
        const names: string[] = [];
        for (let index = 0; index < 12; index++) {
          const name = `${namespace}.tool${String(index).padStart(2, "0")}`;
          names.push(name);
          await client.registry.registerTool({
            spec: { name, inputSchema: { type: "object", description: "z".repeat(60 * 1024) } },
          });
        }
        const listTools = async (token: string) => {
          const page = await client.registry.listTools({ namespace, pageToken: token });
          return { names: page.tools.map((spec) => spec.name), next: page.nextPageToken };
        };
        const discoverTools = async (token: string) => {
          const page = await client.runner.discoverTools({ namespace, pageToken: token });
          return { names: page.tools.map((spec) => spec.name), next: page.nextPageToken };
        };
        for (const list of [listTools, discoverTools]) {
          const seen: string[] = [];
          let token = "";
          let pages = 0;
          do {
            const page = await list(token);
            seen.push(...page.names);
            token = page.next;
            pages += 1;
          } while (token !== "" && pages < 20);
          expect(pages).to.be.greaterThan(1);
          expect(seen).to.deep.equal(names);
        }
      });
    });

    describe("deadlines", () => {
      it("fails ExecuteTool with DEADLINE_EXCEEDED and records the run as a TimeoutError", async () => {
        const id = nextWaitingRun();
        const call = client.runner.executeTool({ toolName: "test.wait_for_cancel" }, { timeoutMs: 300 });
        const error = await call.then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).to.be.instanceOf(ConnectError);
        expect(Code[(error as ConnectError).code]).to.equal("DeadlineExceeded");
        const record = await finalRecord(await id);
        expect(ExecutionState[record.state]).to.equal("FAILED");
        expect(record.result?.error?.errorType).to.equal("TimeoutError");
      });

      it("fails RunTool with DEADLINE_EXCEEDED and records the run as a TimeoutError", async () => {
        const id = nextWaitingRun();
        const error = await collect(
          client.runner.runTool({ toolName: "test.wait_for_cancel" }, { timeoutMs: 300 }),
        ).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).to.be.instanceOf(ConnectError);
        expect(Code[(error as ConnectError).code]).to.equal("DeadlineExceeded");
        const record = await finalRecord(await id);
        expect(ExecutionState[record.state]).to.equal("FAILED");
        expect(record.result?.error?.errorType).to.equal("TimeoutError");
      });
    });

    describe("idempotency keys and call ownership", () => {
      it("does not cancel a run started by StartExecution when an ExecuteTool or RunTool attached by its key goes away", async () => {
        const key = uniqueName("key");
        const id = nextWaitingRun();
        const { execution } = await client.executions.startExecution({
          toolName: "test.wait_for_cancel",
          options: { idempotencyKey: key },
        });
        const executionId = execution?.executionId as string;
        expect(await id).to.equal(executionId);

        // ExecuteTool attaches by the key; its deadline passes, and the server ends the call.
        const executeEnded = once(log.ended, "toolruntime.v1.RunnerService/ExecuteTool");
        const attached = await client.runner
          .executeTool({ toolName: "test.wait_for_cancel", options: { idempotencyKey: key } }, { timeoutMs: 300 })
          .then(
            () => undefined,
            (thrown: unknown) => thrown,
          );
        expect(Code[(attached as ConnectError).code]).to.equal("DeadlineExceeded");
        await executeEnded;

        // RunTool attaches by the key, replays the run's events, and its client leaves.
        const runEnded = once(log.ended, "toolruntime.v1.RunnerService/RunTool");
        const stopping = new AbortController();
        const stream = client.runner.runTool(
          { toolName: "test.wait_for_cancel", options: { idempotencyKey: key } },
          { signal: stopping.signal },
        );
        const kinds: string[] = [];
        try {
          for await (const response of stream) {
            kinds.push(response.event?.event.case ?? "");
            if (response.event?.event.case === "progress") stopping.abort();
          }
        } catch (thrown) {
          expect(Code[(thrown as ConnectError).code]).to.equal("Canceled");
        }
        expect(kinds).to.include("executionStarted");
        await runEnded;

        const { execution: still } = await client.executions.getExecution({ executionId });
        expect(ExecutionState[still?.state ?? 0]).to.equal("RUNNING");
        await client.executions.cancelExecution({ executionId });
        const record = await finalRecord(executionId);
        expect(ExecutionState[record.state]).to.equal("CANCELLED");
        expect(record.result?.error?.details).to.contain("cancelled by anonymous");
      });
    });

    describe("metadata", () => {
      it("fills running_ms after the run's end: the result and the record agree", async () => {
        const { executionId, result } = await client.runner.executeTool({
          toolName: "builtin.echo",
          inputs: { short: true },
        });
        const { execution } = await client.executions.getExecution({ executionId });
        expect(result?.metadata?.["running_ms"]).to.equal(execution?.runningMs);
        const sleep = await collect(client.runner.runTool({ toolName: "builtin.sleep", inputs: { ms: 60 } }));
        const slept = resultOf(sleep.map((response) => response.event as RunEvent));
        const { execution: record } = await client.executions.getExecution({
          executionId: slept.metadata?.["execution_id"] as string,
        });
        expect(slept.metadata?.["running_ms"]).to.be.at.least(60);
        expect(slept.metadata?.["running_ms"]).to.equal(record?.runningMs);
      });

      it("fills awaiting_approval_ms of a rejected run: the result and the record agree", async () => {
        const { execution } = await client.executions.startExecution({ toolName: "test.approval" });
        const executionId = execution?.executionId as string;
        let digest = "";
        for await (const response of client.executions.watchExecution({ executionId })) {
          if (response.event?.event.case === "awaitingApproval") {
            digest = response.event.event.value.inputsDigest;
            break;
          }
        }
        await client.executions.rejectExecution({ executionId, inputsDigest: digest, comment: "no" });
        const record = await finalRecord(executionId);
        const awaited = record.result?.metadata?.["awaiting_approval_ms"];
        expect(awaited).to.be.greaterThan(0);
        expect(awaited).to.equal(record.awaitingApprovalMs);
        expect(record.result?.metadata?.["running_ms"]).to.equal(record.runningMs);
      });
    });
  });
}

describe("deadlines on the HTTP port without a client-side deadline", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close(0);
  });

  it("answers a Connect call whose Connect-Timeout-Ms runs out with deadline_exceeded", async () => {
    const started = nextWaitingRun();
    const response = await fetch(`${server.httpUrl}/toolruntime.v1.RunnerService/RunTool`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", "connect-timeout-ms": "300" },
      body: envelope(JSON.stringify({ toolName: "test.wait_for_cancel" })),
    });
    const frames = parseEnvelopes(Buffer.from(await response.arrayBuffer()));
    const end = JSON.parse(frames.at(-1)?.toString() ?? "{}") as { error?: { code?: string; message?: string } };
    expect(end.error?.code).to.equal("deadline_exceeded");
    expect(end.error?.message).to.contain("the run timed out");
    const record = server.runtime.executions.get(await started).toProto();
    expect(record.result?.error?.errorType).to.equal("TimeoutError");

    const activate = await fetch(`${server.httpUrl}/toolruntime.v1.RunnerService/ActivateTool`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ toolName: "test.wait_for_cancel" }),
    });
    expect(activate.status).to.equal(200);
    const startedUnary = nextWaitingRun();
    const execute = await fetch(`${server.httpUrl}/toolruntime.v1.RunnerService/ExecuteTool`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "300" },
      body: JSON.stringify({ toolName: "test.wait_for_cancel" }),
    });
    const body = (await execute.json()) as { code?: string; message?: string };
    expect(body.code).to.equal("deadline_exceeded");
    expect(body.message).to.contain("the run timed out");
    const unaryRecord = server.runtime.executions.get(await startedUnary).toProto();
    expect(unaryRecord.result?.error?.errorType).to.equal("TimeoutError");
  });

  it("answers a gRPC call whose grpc-timeout runs out with DEADLINE_EXCEEDED", async () => {
    const started = nextWaitingRun();
    const session = http2.connect(server.httpUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/toolruntime.v1.RunnerService/RunTool",
        "content-type": "application/grpc+json",
        te: "trailers",
        "grpc-timeout": "300m",
      });
      stream.end(envelope(JSON.stringify({ toolName: "test.wait_for_cancel" })));
      const [trailers] = (await once(stream, "trailers")) as [http2.IncomingHttpHeaders];
      expect(trailers["grpc-status"]).to.equal(String(Code.DeadlineExceeded));
      const record = server.runtime.executions.get(await started).toProto();
      expect(record.result?.error?.errorType).to.equal("TimeoutError");
    } finally {
      session.destroy();
    }
  });
});

describe("watchers on shutdown", () => {
  for (const stackName of clientStackNames) {
    it(`gives a WatchExecution of a detached run its completed event over ${stackName}`, async () => {
      const server = await startTestServer();
      const client = createClientStack(stackName, server);
      try {
        const started = nextWaitingRun();
        const { execution } = await client.executions.startExecution({ toolName: "test.wait_for_cancel" });
        const executionId = execution?.executionId as string;
        await started;
        const events: RunEvent[] = [];
        let closing: Promise<void> | undefined;
        for await (const response of client.executions.watchExecution({ executionId })) {
          events.push(response.event as RunEvent);
          if (response.event?.event.case === "progress") closing = server.close(0);
        }
        await closing;
        const result = resultOf(events);
        expect(result.error?.errorType).to.equal("CancelledError");
        expect(result.error?.details).to.contain("the server is shutting down");
      } finally {
        client.close();
        await server.close(0);
      }
    });

    it(`ends a WatchExecution with UNAVAILABLE when the run cannot end within the grace period over ${stackName}`, async () => {
      const options: ServerOptions = { tools: [...builtinTools, ...testTools, slowRollbackTool] };
      const server = await startTestServer(options);
      const client = createClientStack(stackName, server);
      try {
        const { execution } = await client.executions.startExecution({ toolName: "test.slow_rollback" });
        const executionId = execution?.executionId as string;
        const events: string[] = [];
        let closing: Promise<void> | undefined;
        const watched = (async () => {
          for await (const response of client.executions.watchExecution({ executionId })) {
            events.push(response.event?.event.case ?? "");
            if (response.event?.event.case === "progress") closing = server.close(0);
          }
        })();
        await expectToolError(
          watched,
          Code.Unavailable,
          "UnavailableError",
          `run "${executionId}" of "test.slow_rollback" did not end within the grace period`,
        );
        expect(events).to.not.include("completed");
        rollbackGate.release();
        await closing;
      } finally {
        rollbackGate.release();
        client.close();
        await server.close(0);
      }
    });
  }
});

/** A Connect or gRPC envelope around one message. */
function envelope(json: string): Buffer {
  const body = Buffer.from(json);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** The messages of a sequence of envelopes. */
function parseEnvelopes(bytes: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset + 5 <= bytes.length) {
    const length = bytes.readUInt32BE(offset + 1);
    frames.push(bytes.subarray(offset + 5, offset + 5 + length));
    offset += 5 + length;
  }
  return frames;
}
