import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { once } from "node:events";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

for (const stackName of clientStackNames) {
  describe(`RunnerService.RunTool over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer({ heartbeatIntervalMs: 40 });
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    const events = async (toolName: string, inputs = {}, timeoutMs = 0): Promise<RunEvent[]> =>
      (await collect(client.runner.runTool({ toolName, inputs, timeoutMs }))).map((response) => {
        if (!response.event) throw new Error("response without an event");
        return response.event;
      });

    it("streams every stage in order with gapless sequence numbers and ends with one COMPLETED", async () => {
      const stream = await events("builtin.countdown", { from: 3, interval_ms: 30 });
      const kinds = stream.map((event) => event.event.case);
      expect(kinds.slice(0, 3)).to.deep.equal(["discovered", "activated", "executionStarted"]);
      expect(kinds.slice(-3)).to.deep.equal(["executionFinished", "deactivated", "completed"]);
      const middle = kinds.slice(3, -3);
      expect(middle.filter((kind) => kind === "progress").length).to.be.at.least(1);
      expect(middle.every((kind) => kind === "progress" || kind === "heartbeat")).to.equal(true);
      expect(stream.map((event) => event.sequence)).to.deep.equal(stream.map((_, index) => BigInt(index + 1)));
      expect(new Set(stream.map((event) => event.executionId)).size).to.equal(1);
      expect(stream.every((event) => event.time !== undefined)).to.equal(true);
      const completed = stream.at(-1)?.event;
      expect(completed?.case).to.equal("completed");
      const result = completed?.case === "completed" ? completed.value.result : undefined;
      expect(result?.success).to.equal(true);
      expect(result?.output).to.deep.equal({ counted: 3 });
      expect(result?.metadata?.["execution_id"]).to.equal(stream[0]?.executionId);
      const deactivated = stream.at(-2)?.event;
      expect(deactivated?.case === "deactivated" && deactivated.value.wasActive).to.equal(true);
    });

    it("reports the last progress with its fraction", async () => {
      const stream = await events("builtin.countdown", { from: 2, interval_ms: 0 });
      const progress = stream.flatMap((event) => (event.event.case === "progress" ? [event.event.value] : []));
      expect(progress.at(-1)?.fraction).to.equal(1);
      expect(progress.at(-1)?.message).to.equal("done");
    });

    it("sends heartbeats while a run is quiet", async () => {
      const stream = await events("builtin.sleep", { ms: 150 });
      const heartbeats = stream.filter((event) => event.event.case === "heartbeat");
      expect(heartbeats.length).to.be.at.least(1);
    });

    it("delivers a failed run as a COMPLETED result, not as an RPC error", async () => {
      const stream = await events("test.throw_string");
      const completed = stream.at(-1)?.event;
      expect(completed?.case).to.equal("completed");
      if (completed?.case !== "completed") return;
      expect(completed.value.result?.success).to.equal(false);
      expect(completed.value.result?.error?.errorType).to.equal("HandlerError");
      const finished = stream.find((event) => event.event.case === "executionFinished")?.event;
      expect(finished?.case === "executionFinished" && finished.value.success).to.equal(false);
    });

    it("answers NOT_FOUND before the first event for an unknown tool", async () => {
      const iterator = client.runner.runTool({ toolName: "no.such_tool" })[Symbol.asyncIterator]();
      await expectToolError(iterator.next(), Code.NotFound, "NotFoundError", '"no.such_tool"');
    });

    it("answers FAILED_PRECONDITION before the first event for a tool without a handler", async () => {
      const name = `${uniqueName("bare")}.tool`;
      await client.registry.registerTool({ spec: { name } });
      const iterator = client.runner.runTool({ toolName: name })[Symbol.asyncIterator]();
      await expectToolError(iterator.next(), Code.FailedPrecondition, "HandlerMissingError");
    });

    it("answers INVALID_ARGUMENT before the first event for an invalid name", async () => {
      const iterator = client.runner.runTool({ toolName: "Not Valid" })[Symbol.asyncIterator]();
      await expectToolError(iterator.next(), Code.InvalidArgument, "InvalidRequestError");
    });

    it("cancels the run when the client cancels the stream mid-run, and keeps serving", async () => {
      const abort = new AbortController();
      const aborted = once(testToolEvents, "aborted");
      const seen: string[] = [];
      let executionId = "";
      let failure: unknown;
      try {
        for await (const response of client.runner.runTool(
          { toolName: "test.wait_for_cancel" },
          { signal: abort.signal },
        )) {
          seen.push(response.event?.event.case ?? "");
          executionId = response.event?.executionId ?? "";
          if (response.event?.event.case === "progress") abort.abort();
        }
      } catch (error) {
        failure = error;
      }
      expect(ConnectError.from(failure).code).to.equal(Code.Canceled);
      expect(seen).to.include("progress");
      expect(seen).to.not.include("completed");
      const [abortedId, reason] = (await aborted) as [string, string];
      expect(abortedId).to.equal(executionId);
      expect(reason).to.contain("cancelled");
      const after = await events("builtin.echo", { still: "serving" });
      expect(after.at(-1)?.event.case).to.equal("completed");
    });
  });
}
