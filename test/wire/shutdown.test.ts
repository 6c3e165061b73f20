import { expect } from "chai";
import { once } from "node:events";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { createClientStack } from "../support/client-stacks.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

for (const stackName of ["grpc-js", "connect-binary-http2", "connect-json-http1"] as const) {
  describe(`Shutdown with a run in flight over ${stackName}`, () => {
    it("lets the run finish its stream with a cancelled result naming the shutdown, then stops", async () => {
      const server = await startTestServer();
      const client = createClientStack(stackName, server);
      const events: RunEvent[] = [];
      const started = once(testToolEvents, "aborted");
      const stream = (async () => {
        for await (const response of client.runner.runTool({ toolName: "test.wait_for_cancel" })) {
          if (response.event) events.push(response.event);
          if (response.event?.event.case === "progress") void server.close(100);
        }
      })();
      await stream;
      const [, reason] = (await started) as [string, string];
      expect(reason).to.contain("the server is shutting down");
      const last = events.at(-1)?.event;
      expect(last?.case).to.equal("completed");
      if (last?.case !== "completed") return;
      expect(last.value.result?.success).to.equal(false);
      expect(last.value.result?.error?.errorType).to.equal("CancelledError");
      expect(last.value.result?.error?.details).to.equal(
        'run of "test.wait_for_cancel" was cancelled: the server is shutting down',
      );
      client.close();
      await server.close(0);
    });
  });
}
