import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { ExecutionState, type Execution, type ExecutionOptions } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { checkpointedState } from "../support/test-tools.js";

type Options = Partial<Omit<ExecutionOptions, "$typeName" | "retryPolicy">> & {
  retryPolicy?: { maxAttempts?: number; initialBackoffMs?: number; nonRetryableErrorTypes?: string[] };
};

for (const stackName of clientStackNames) {
  describe(`ExecutionService over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer({ executions: { maxConcurrent: 4, maxQueued: 2 } });
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    const start = async (toolName: string, inputs: JsonObject = {}, options: Options = {}, timeoutMs = 0) => {
      const response = await client.executions.startExecution({ toolName, inputs, options, timeoutMs });
      return response.execution as Execution;
    };
    const events = async (id: string, afterSequence = 0n): Promise<RunEvent[]> =>
      (await collect(client.executions.watchExecution({ executionId: id, afterSequence }))).map((response) => {
        if (!response.event) throw new Error("response without an event");
        return response.event;
      });
    const resultOf = (stream: RunEvent[]) => {
      const last = stream.at(-1)?.event;
      if (last?.case !== "completed" || !last.value.result)
        throw new Error(`stream did not end with a result: ${last?.case}`);
      return last.value.result;
    };
    const kinds = (stream: RunEvent[]) =>
      stream.map((event) => event.event.case).filter((kind) => kind !== "heartbeat");

    describe("runs as resources", () => {
      it("starts a run detached, replays all its events, and keeps its record with timings", async () => {
        const started = await start("builtin.countdown", { from: 2, interval_ms: 20 });
        expect(started.executionId).to.match(/^[0-9a-f-]{36}$/);
        expect([ExecutionState.RUNNING, ExecutionState.SUCCEEDED]).to.include(started.state);
        const stream = await events(started.executionId);
        expect(stream.map((event) => event.sequence)).to.deep.equal(stream.map((_, index) => BigInt(index + 1)));
        expect(resultOf(stream).output).to.deep.equal({ counted: 2 });
        const { execution } = await client.executions.getExecution({ executionId: started.executionId });
        expect(execution?.state).to.equal(ExecutionState.SUCCEEDED);
        expect(execution?.attempts).to.equal(1);
        expect(execution?.lastSequence).to.equal(BigInt(stream.length));
        expect(execution?.runningMs).to.be.greaterThan(0);
        expect(execution?.finishedAt).to.not.equal(undefined);
        expect(execution?.inputsDigest).to.match(/^[0-9a-f]{64}$/);
      });

      it("replays only the events after a sequence number", async () => {
        const started = await start("builtin.countdown", { from: 2, interval_ms: 1 });
        const all = await events(started.executionId);
        const tail = await events(started.executionId, 3n);
        expect(tail.map((event) => event.sequence)).to.deep.equal(all.slice(3).map((event) => event.sequence));
      });

      it("answers NOT_FOUND for an unknown execution on every RPC", async () => {
        const executionId = "00000000-0000-4000-8000-000000000000";
        await expectToolError(client.executions.getExecution({ executionId }), Code.NotFound, "NotFoundError");
        await expectToolError(client.executions.cancelExecution({ executionId }), Code.NotFound, "NotFoundError");
        const watch = client.executions.watchExecution({ executionId })[Symbol.asyncIterator]();
        await expectToolError(watch.next(), Code.NotFound, "NotFoundError");
      });

      it("lists runs newest first, filtered by tool and state, in pages", async () => {
        const first = await start("builtin.echo", { n: 1 });
        const second = await start("builtin.echo", { n: 2 });
        await events(second.executionId);
        await events(first.executionId);
        const page = await client.executions.listExecutions({
          toolName: "builtin.echo",
          state: ExecutionState.SUCCEEDED,
          pageSize: 1,
        });
        expect(page.executions.map((execution) => execution.executionId)).to.deep.equal([second.executionId]);
        const next = await client.executions.listExecutions({
          toolName: "builtin.echo",
          state: ExecutionState.SUCCEEDED,
          pageSize: 1,
          pageToken: page.nextPageToken,
        });
        expect(next.executions[0]?.executionId).to.equal(first.executionId);
      });

      it("cancels a run, idempotently, and refuses to cancel a finished one", async () => {
        const started = await start("builtin.sleep", { ms: 60_000 });
        await client.executions.cancelExecution({ executionId: started.executionId });
        const result = resultOf(await events(started.executionId));
        expect(result.error?.errorType).to.equal("CancelledError");
        const again = await client.executions.cancelExecution({ executionId: started.executionId });
        expect(again.execution?.state).to.equal(ExecutionState.CANCELLED);
        const done = await start("builtin.echo");
        await events(done.executionId);
        await expectToolError(
          client.executions.cancelExecution({ executionId: done.executionId }),
          Code.FailedPrecondition,
          "ExecutionFinishedError",
          `execution "${done.executionId}" already finished (SUCCEEDED): there is nothing to cancel`,
        );
      });

      it("reports its limits and features", async () => {
        const capabilities = await client.executions.getCapabilities({});
        expect(capabilities.maxConcurrentRuns).to.equal(4);
        expect(capabilities.maxQueuedRuns).to.equal(2);
        expect(capabilities.features).to.include.members(["detached-runs", "approvals", "retries"]);
        expect(capabilities.retainedExecutions).to.be.greaterThan(0);
      });
    });

    describe("streamed output and time bounds", () => {
      it("streams log lines and output chunks in order", async () => {
        const stream = await events((await start("test.streaming")).executionId);
        const body = stream
          .map((event) => event.event)
          .filter((event) => event.case === "log" || event.case === "output");
        expect(body.map((event) => event.case)).to.deep.equal(["log", "output", "output", "log"]);
        const [firstLog] = body;
        expect(firstLog?.case === "log" && firstLog.value.level).to.equal("info");
      });

      it("refuses a timeout above the tool's maximum with INVALID_ARGUMENT", async () => {
        await expectToolError(
          client.executions.startExecution({ toolName: "test.bounded", timeoutMs: 2000 }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "max_timeout_ms is 1000",
        );
      });

      it("ends a run whose handler stops reporting progress with a HeartbeatTimeoutError", async () => {
        const started = await start("test.wait_for_cancel", {}, { heartbeatTimeoutMs: 100 });
        const result = resultOf(await events(started.executionId));
        expect(result.error?.errorType).to.equal("HeartbeatTimeoutError");
      });

      it("queues runs past a tool's own limit and ends one that waits too long with a QueueTimeoutError", async () => {
        const holder = await start("test.bounded", { ms: 900 });
        const waiting = await start("test.bounded", { ms: 1 }, { queueTimeoutMs: 50 });
        expect(waiting.state).to.equal(ExecutionState.QUEUED);
        const stream = await events(waiting.executionId);
        expect(kinds(stream)).to.include("queued");
        expect(resultOf(stream).error?.errorType).to.equal("QueueTimeoutError");
        await client.executions.cancelExecution({ executionId: holder.executionId });
      });

      it("fails fast with RESOURCE_EXHAUSTED and a retry delay when the queue is full", async () => {
        const holder = await start("test.bounded", { ms: 900 });
        const queued = [await start("test.bounded", { ms: 1 }), await start("test.bounded", { ms: 1 })];
        const error = await expectToolError(
          client.executions.startExecution({ toolName: "test.bounded", inputs: { ms: 1 } }),
          Code.ResourceExhausted,
          "ResourceExhaustedError",
          "cannot be queued",
        );
        expect(error.retryAfterMs).to.be.greaterThan(0);
        for (const run of [...queued, holder])
          await client.executions.cancelExecution({ executionId: run.executionId });
      });
    });

    describe("capability flags that act", () => {
      it("retries an idempotent tool under a retry policy, each attempt visible", async () => {
        const started = await start(
          "test.flaky",
          { fail_times: 2 },
          { retryPolicy: { maxAttempts: 3, initialBackoffMs: 1 } },
        );
        const stream = await events(started.executionId);
        const result = resultOf(stream);
        expect(result.success).to.equal(true);
        expect(result.output).to.deep.equal({ attempts: 3 });
        expect(result.metadata?.["attempts"]).to.equal(3);
        const attempts = stream.flatMap((event) =>
          event.event.case === "executionStarted" ? [event.event.value.attempt] : [],
        );
        expect(attempts).to.deep.equal([1, 2, 3]);
        expect(kinds(stream).filter((kind) => kind === "retryScheduled")).to.have.length(2);
        expect(
          (await client.executions.getExecution({ executionId: started.executionId })).execution?.attempts,
        ).to.equal(3);
      });

      it("does not retry error types the policy names", async () => {
        const started = await start(
          "test.flaky",
          { fail_times: 2 },
          { retryPolicy: { maxAttempts: 3, initialBackoffMs: 1, nonRetryableErrorTypes: ["HandlerError"] } },
        );
        const result = resultOf(await events(started.executionId));
        expect(result.error?.errorType).to.equal("HandlerError");
        expect(result.metadata?.["attempts"]).to.equal(1);
      });

      it("refuses a retry policy for a tool that is neither idempotent nor read_only", async () => {
        await expectToolError(
          client.executions.startExecution({
            toolName: "test.throw_string",
            options: { retryPolicy: { maxAttempts: 2 } },
          }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "neither idempotent nor read_only",
        );
      });

      it("returns the same run for a repeated idempotency key, and refuses the key with other inputs", async () => {
        const key = `key-${stackName}`;
        const first = await client.executions.startExecution({
          toolName: "builtin.echo",
          inputs: { a: 1, b: 2 },
          options: { idempotencyKey: key },
        });
        const again = await client.executions.startExecution({
          toolName: "builtin.echo",
          inputs: { b: 2, a: 1 },
          options: { idempotencyKey: key },
        });
        expect(again.deduplicated).to.equal(true);
        expect(again.execution?.executionId).to.equal(first.execution?.executionId);
        await expectToolError(
          client.executions.startExecution({
            toolName: "builtin.echo",
            inputs: { a: 2 },
            options: { idempotencyKey: key },
          }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "with other inputs",
        );
      });

      it("checkpoints a checkpointable tool and rolls back a failed run, saying so in the metadata", async () => {
        checkpointedState.counter = 10;
        checkpointedState.breakRollback = false;
        const stream = await events((await start("test.checkpointed", { add: 5, fail: true })).executionId);
        expect(checkpointedState.counter).to.equal(10);
        expect(kinds(stream)).to.include.members(["checkpointTaken", "rolledBack"]);
        const result = resultOf(stream);
        expect(result.metadata?.["checkpoint"]).to.deep.equal({ supported: true, taken: true, rolled_back: true });
        expect(result.metadata?.["writes"]).to.equal(true);
        const ok = resultOf(await events((await start("test.checkpointed", { add: 5 })).executionId));
        expect(ok.success).to.equal(true);
        expect(checkpointedState.counter).to.equal(15);
      });

      it("reports a rollback that fails instead of hiding it", async () => {
        checkpointedState.breakRollback = true;
        const result = resultOf(await events((await start("test.checkpointed", { add: 1, fail: true })).executionId));
        checkpointedState.breakRollback = false;
        expect(result.metadata?.["checkpoint"]).to.deep.include({
          rolled_back: false,
          rollback_error: "the backup is gone",
        });
      });

      it("refuses an unsafe tool without acknowledgement, and runs it with one", async () => {
        await expectToolError(
          client.executions.startExecution({ toolName: "test.unsafe" }),
          Code.FailedPrecondition,
          "UnsafeNotAcknowledgedError",
          "acknowledge_unsafe",
        );
        const result = resultOf(
          await events((await start("test.unsafe", {}, { acknowledgeUnsafe: true })).executionId),
        );
        expect(result.success).to.equal(true);
      });

      it("holds a run needing approval until approved with the right digest, once", async () => {
        const started = await start("test.approval", { target: "prod" });
        expect(started.state).to.equal(ExecutionState.AWAITING_APPROVAL);
        await expectToolError(
          client.executions.approveExecution({ executionId: started.executionId, inputsDigest: "0".repeat(64) }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "inputs_digest does not match",
        );
        const approved = await client.executions.approveExecution({
          executionId: started.executionId,
          inputsDigest: started.inputsDigest,
          comment: "looks right",
        });
        expect(approved.execution?.approval?.approved).to.equal(true);
        // The record after the decision: the run went on (or is over already).
        expect(approved.execution?.state).to.not.equal(ExecutionState.AWAITING_APPROVAL);
        await expectToolError(
          client.executions.approveExecution({ executionId: started.executionId, inputsDigest: started.inputsDigest }),
          Code.FailedPrecondition,
          "ApprovalNotPendingError",
        );
        await expectToolError(
          client.executions.rejectExecution({ executionId: started.executionId, inputsDigest: started.inputsDigest }),
          Code.FailedPrecondition,
          "ApprovalNotPendingError",
          `execution "${started.executionId}" is not awaiting approval`,
        );
        const stream = await events(started.executionId);
        expect(kinds(stream).slice(0, 4)).to.deep.equal([
          "discovered",
          "activated",
          "awaitingApproval",
          "approvalDecided",
        ]);
        const result = resultOf(stream);
        expect(result.success).to.equal(true);
        expect(result.metadata?.["approval"]).to.deep.include({
          approved: true,
          decided_by: "anonymous",
          comment: "looks right",
        });
        expect((await client.executions.getExecution({ executionId: started.executionId })).execution?.writes).to.equal(
          true,
        );
      });

      it("ends a rejected run with ApprovalRejectedError and an unapproved one with ApprovalTimeoutError", async () => {
        const rejected = await start("test.approval");
        const decided = await client.executions.rejectExecution({
          executionId: rejected.executionId,
          inputsDigest: rejected.inputsDigest,
          comment: "no",
        });
        expect(decided.execution?.state).to.equal(ExecutionState.FAILED);
        expect(resultOf(await events(rejected.executionId)).error?.errorType).to.equal("ApprovalRejectedError");
        const ignored = await start("test.approval", {}, { approvalTimeoutMs: 50 });
        expect(resultOf(await events(ignored.executionId)).error?.errorType).to.equal("ApprovalTimeoutError");
      });
    });

    describe("RunTool as start and watch", () => {
      it("keeps a run going after the client drops the stream when asked to detach", async () => {
        const abort = new AbortController();
        let executionId = "";
        try {
          for await (const response of client.runner.runTool(
            {
              toolName: "builtin.countdown",
              inputs: { from: 3, interval_ms: 30 },
              options: { detachOnDisconnect: true },
            },
            { signal: abort.signal },
          )) {
            executionId = response.event?.executionId ?? executionId;
            if (response.event?.event.case === "progress") abort.abort();
          }
        } catch {
          // The client's own cancellation.
        }
        const result = resultOf(await events(executionId));
        expect(result.success).to.equal(true);
        expect(result.output).to.deep.equal({ counted: 3 });
      });
    });
  });
}
