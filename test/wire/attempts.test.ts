import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ExecutionState, type Execution, type ExecutionOptions } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

type Options = Partial<Omit<ExecutionOptions, "$typeName" | "retryPolicy">> & {
  retryPolicy?: { maxAttempts?: number; initialBackoffMs?: number };
};

const tool = "test.stubborn_writer";
const initial = "initial\n";

/** What test.stubborn_writer did, in the order it did it. */
const writes: { executionId: string; attempt: number; line: number }[] = [];
const stopped = new Set<string>();
testToolEvents.on("write", (executionId: string, attempt: number, line: number) =>
  writes.push({ executionId, attempt, line }),
);
testToolEvents.on("stopped", (executionId: string) => stopped.add(executionId));

/** Resolves at the next line test.stubborn_writer appends for that run. */
function nextWrite(executionId: string): Promise<void> {
  return new Promise((resolve) => {
    const onWrite = (id: string): void => {
      if (id !== executionId) return;
      testToolEvents.off("write", onWrite);
      resolve();
    };
    testToolEvents.on("write", onWrite);
  });
}

const kinds = (stream: RunEvent[]) => stream.map((event) => event.event.case).filter((kind) => kind !== "heartbeat");
const resultOf = (stream: RunEvent[]) => {
  const last = stream.at(-1)?.event;
  if (last?.case !== "completed" || !last.value.result)
    throw new Error(`stream did not end with a result: ${last?.case}`);
  return last.value.result;
};

for (const stackName of clientStackNames) {
  describe(`Attempts over ${stackName}`, () => {
    let patient: RunningServer;
    let hasty: RunningServer;
    let client: ClientStack;
    let hastyClient: ClientStack;
    let folder: string;
    let files = 0;

    before(async () => {
      patient = await startTestServer({ executions: { stopGraceMs: 60_000 } });
      hasty = await startTestServer({ executions: { stopGraceMs: 100 } });
      client = createClientStack(stackName, patient);
      hastyClient = createClientStack(stackName, hasty);
      folder = mkdtempSync(join(tmpdir(), "toolruntime-attempts-"));
    });
    after(async () => {
      // A failed test may leave a handler writing until released.
      for (const { executionId } of writes) if (!stopped.has(executionId)) testToolEvents.emit("release", executionId);
      client.close();
      hastyClient.close();
      await Promise.all([patient.close(0), hasty.close(0)]);
      rmSync(folder, { recursive: true, force: true });
    });

    const newFile = (): string => {
      const path = join(folder, `state-${++files}.txt`);
      writeFileSync(path, initial);
      return path;
    };
    const start = async (on: ClientStack, inputs: JsonObject, options: Options = {}, timeoutMs = 0) =>
      (await on.executions.startExecution({ toolName: tool, inputs, options, timeoutMs })).execution as Execution;
    /** The run's events until `completed`; notes whether the handler had stopped when it arrived. */
    const watch = async (on: ClientStack, executionId: string) => {
      const stream = (await collect(on.executions.watchExecution({ executionId }))).map((response) => {
        if (!response.event) throw new Error("response without an event");
        return response.event;
      });
      return { stream, stoppedBeforeCompleted: stopped.has(executionId) };
    };

    describe("with a handler that stops within the grace period", () => {
      it("rolls back a cancelled run only after its handler stopped writing, and nothing is appended later", async () => {
        const path = newFile();
        const run = await start(client, { path, after_abort: 3 });
        await nextWrite(run.executionId);
        await client.executions.cancelExecution({ executionId: run.executionId });
        const { stream, stoppedBeforeCompleted } = await watch(client, run.executionId);
        expect(stoppedBeforeCompleted, "the handler stopped before the run completed").to.equal(true);
        expect(readFileSync(path, "utf8")).to.equal(initial);
        const result = resultOf(stream);
        expect(result.error?.errorType).to.equal("CancelledError");
        expect(result.metadata?.["checkpoint"]).to.deep.equal({ supported: true, taken: true, rolled_back: true });
        const own = writes.filter((write) => write.executionId === run.executionId);
        expect(own.length, "lines written, 3 of them after the abort").to.be.greaterThanOrEqual(4);
        const { execution } = await client.executions.getExecution({ executionId: run.executionId });
        expect(execution?.state).to.equal(ExecutionState.CANCELLED);
        expect(readFileSync(path, "utf8")).to.equal(initial);
      });

      it("starts attempt 2 only after attempt 1 stopped, so their writes never interleave", async () => {
        const path = newFile();
        const run = await start(
          client,
          { path, after_abort: 3 },
          { retryPolicy: { maxAttempts: 2, initialBackoffMs: 1 } },
          100,
        );
        const { stream, stoppedBeforeCompleted } = await watch(client, run.executionId);
        expect(stoppedBeforeCompleted).to.equal(true);
        const result = resultOf(stream);
        expect(result.success, result.error?.details).to.equal(true);
        expect(result.output).to.deep.equal({ attempt: 2 });
        expect(result.metadata?.["attempts"]).to.equal(2);
        expect(readFileSync(path, "utf8")).to.equal(`${initial}a2-1\na2-2\n`);
        const order = writes.filter((write) => write.executionId === run.executionId).map((write) => write.attempt);
        const firstOfSecond = order.indexOf(2);
        expect(firstOfSecond, "attempt 2 wrote").to.be.greaterThan(0);
        expect(order.lastIndexOf(1), "attempt 1's last write comes before attempt 2's first").to.be.lessThan(
          firstOfSecond,
        );
        expect(order.slice(firstOfSecond)).to.deep.equal([2, 2]);
        const lifecycle = kinds(stream).filter((kind) => kind !== "progress" && kind !== "log" && kind !== "output");
        expect(lifecycle).to.deep.equal([
          "discovered",
          "activated",
          "checkpointTaken",
          "executionStarted",
          "executionFinished",
          "rolledBack",
          "retryScheduled",
          "checkpointTaken",
          "executionStarted",
          "executionFinished",
          "deactivated",
          "completed",
        ]);
      });

      it("answers ExecuteTool at the timeout while the handler still writes; rollback and the record follow", async () => {
        const path = newFile();
        const runner = uniqueName("writer");
        await client.runner.activateTool({ runner, toolName: tool });
        const { executionId, result } = await client.runner.executeTool({
          runner,
          toolName: tool,
          inputs: { path, until_released: true },
          timeoutMs: 100,
        });
        expect(result?.error?.errorType).to.equal("TimeoutError");
        expect(result?.metadata?.["checkpoint"]).to.deep.equal({
          supported: true,
          taken: true,
          rolled_back: false,
          rollback_pending: true,
        });
        const { execution } = await client.executions.getExecution({ executionId });
        expect(execution?.state, "the run waits for its handler to stop").to.equal(ExecutionState.RUNNING);
        expect(stopped.has(executionId)).to.equal(false);
        testToolEvents.emit("release", executionId);
        const { stream } = await watch(client, executionId);
        const final = resultOf(stream);
        expect(final.error?.errorType).to.equal("TimeoutError");
        expect(final.metadata?.["checkpoint"]).to.deep.equal({ supported: true, taken: true, rolled_back: true });
        expect(readFileSync(path, "utf8")).to.equal(initial);
      });
    });

    describe("with a handler that outlives the grace period", () => {
      it("says the rollback is not guaranteed instead of claiming it", async () => {
        const path = newFile();
        const run = await start(hastyClient, { path, until_released: true });
        await nextWrite(run.executionId);
        await hastyClient.executions.cancelExecution({ executionId: run.executionId });
        const { stream } = await watch(hastyClient, run.executionId);
        testToolEvents.emit("release", run.executionId);
        const expected = `handler of "${tool}" was still running 100 ms after attempt 1 ended: rollback ran, but what the handler writes after it stays`;
        const result = resultOf(stream);
        expect(result.error?.errorType).to.equal("CancelledError");
        expect(result.metadata?.["checkpoint"]).to.deep.equal({
          supported: true,
          taken: true,
          handler_stopped: false,
          rolled_back: false,
          rollback_error: expected,
        });
        const rolledBack = stream.find((event) => event.event.case === "rolledBack")?.event;
        expect(rolledBack?.case === "rolledBack" && rolledBack.value).to.deep.include({
          success: false,
          error: expected,
        });
      });

      it("does not start another attempt and fails with a HandlerNotStoppedError", async () => {
        const path = newFile();
        const run = await start(
          hastyClient,
          { path, until_released: true },
          { retryPolicy: { maxAttempts: 3, initialBackoffMs: 1 } },
          50,
        );
        const { stream } = await watch(hastyClient, run.executionId);
        testToolEvents.emit("release", run.executionId);
        const result = resultOf(stream);
        expect(result.error?.errorType).to.equal("HandlerNotStoppedError");
        expect(result.error?.details).to.equal(
          `handler of "${tool}" was still running 100 ms after attempt 1 ended (TimeoutError): no further attempt was started, so that attempts never overlap; make the handler stop when its signal aborts`,
        );
        expect(result.metadata?.["attempts"]).to.equal(1);
        expect(kinds(stream)).to.not.include("retryScheduled");
        expect(writes.filter((write) => write.executionId === run.executionId && write.attempt > 1)).to.deep.equal([]);
        const { execution } = await hastyClient.executions.getExecution({ executionId: run.executionId });
        expect(execution?.state).to.equal(ExecutionState.FAILED);
        expect(execution?.attempts).to.equal(1);
      });
    });
  });
}
