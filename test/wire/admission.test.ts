import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ExecutionState, type Execution } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

for (const stackName of clientStackNames) {
  describe(`Admission over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer({ executions: { maxConcurrent: 2 } });
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    const start = async (toolName: string, inputs: JsonObject = {}) =>
      (await client.executions.startExecution({ toolName, inputs })).execution as Execution;
    const stateOf = async (executionId: string) =>
      (await client.executions.getExecution({ executionId })).execution?.state;

    it("lets a run of another tool pass a run queued at its own tool's max_concurrency", async () => {
      // Global limit 2: test.bounded (max_concurrency 1) runs once and queues its second run.
      const holder = await start("test.bounded", { ms: 60_000 });
      const blocked = await start("test.bounded", { ms: 1 });
      expect(blocked.state).to.equal(ExecutionState.QUEUED);

      const echo = await start("builtin.echo", { hello: "world" });
      expect(echo.state, "admitted at once into the free global slot").to.not.equal(ExecutionState.QUEUED);
      const events = (await collect(client.executions.watchExecution({ executionId: echo.executionId }))).map(
        (response) => response.event?.event,
      );
      expect(events.map((event) => event?.case)).to.not.include("queued");
      const last = events.at(-1);
      expect(last?.case === "completed" && last.value.result?.output).to.deep.equal({ echo: { hello: "world" } });
      expect(last?.case === "completed" && last.value.result?.metadata?.["queued_ms"]).to.equal(0);

      // The other tool's runs are where they were: one running, one still waiting for it.
      expect(await stateOf(holder.executionId)).to.equal(ExecutionState.RUNNING);
      expect(await stateOf(blocked.executionId)).to.equal(ExecutionState.QUEUED);
      await client.executions.cancelExecution({ executionId: holder.executionId });
      const next = (await collect(client.executions.watchExecution({ executionId: blocked.executionId }))).at(-1)?.event
        ?.event;
      expect(next?.case === "completed" && next.value.result?.success).to.equal(true);
    });

    it("keeps runs of one tool in order: a later run of a tool does not pass its own queued run", async () => {
      const holder = await start("test.bounded", { ms: 60_000 });
      const first = await start("test.bounded", { ms: 60_000 });
      expect(first.state).to.equal(ExecutionState.QUEUED);
      const second = await start("test.bounded", { ms: 1 });
      expect(second.state).to.equal(ExecutionState.QUEUED);
      await client.executions.cancelExecution({ executionId: holder.executionId });
      await collect(client.executions.watchExecution({ executionId: holder.executionId }));
      expect(await stateOf(first.executionId)).to.equal(ExecutionState.RUNNING);
      expect(await stateOf(second.executionId)).to.equal(ExecutionState.QUEUED);
      await client.executions.cancelExecution({ executionId: first.executionId });
      const last = (await collect(client.executions.watchExecution({ executionId: second.executionId }))).at(-1)?.event
        ?.event;
      expect(last?.case === "completed" && last.value.result?.success).to.equal(true);
    });
  });
}

describe("Admission counts every run by its outcome", () => {
  let server: RunningServer;
  let client: ClientStack;

  before(async () => {
    server = await startTestServer({ executions: { maxConcurrent: 1 } });
    client = createClientStack(clientStackNames[0], server);
  });
  after(async () => {
    client.close();
    await server.close(0);
  });

  const counted = async (outcome: string): Promise<number> => {
    const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
    const line = text
      .split("\n")
      .find((row) => row.startsWith(`toolruntime_executions_total{tool="test.bounded",outcome="${outcome}"}`));
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  };

  it("counts a run that timed out in the queue, which never reached a handler, as a QueueTimeoutError", async () => {
    const before = await counted("QueueTimeoutError");
    const holder = (await client.executions.startExecution({ toolName: "test.bounded", inputs: { ms: 60_000 } }))
      .execution as Execution;
    const waiting = (
      await client.executions.startExecution({
        toolName: "test.bounded",
        inputs: { ms: 1 },
        options: { queueTimeoutMs: 50 },
      })
    ).execution as Execution;
    expect(waiting.state).to.equal(ExecutionState.QUEUED);
    const last = (await collect(client.executions.watchExecution({ executionId: waiting.executionId }))).at(-1)?.event
      ?.event;
    expect(last?.case === "completed" && last.value.result?.error?.errorType).to.equal("QueueTimeoutError");
    expect(await counted("QueueTimeoutError")).to.equal(before + 1);

    const cancelledBefore = await counted("CancelledError");
    await client.executions.cancelExecution({ executionId: holder.executionId });
    await collect(client.executions.watchExecution({ executionId: holder.executionId }));
    expect(await counted("CancelledError")).to.equal(cancelledBefore + 1);
  });
});
