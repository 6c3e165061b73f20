import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Client, ClientReadableStream } from "@grpc/grpc-js";
import { expect } from "chai";
import { protoPath as healthProtoPath } from "grpc-health-check";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { startMainProcess } from "../support/main-process.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";

type HealthClient = Client & { Watch(request: { service: string }): ClientReadableStream<{ status: string }> };

/** Collects a RunTool stream's events, resolving `started` once the handler runs. */
function runAndCollect(runner: ReturnType<typeof createClient<typeof RunnerService>>, ms: number) {
  let markStarted: () => void = () => undefined;
  let failStart: (error: unknown) => void = () => undefined;
  const started = new Promise<void>((resolve, reject) => {
    markStarted = resolve;
    failStart = reject;
  });
  const done = (async () => {
    const events: RunEvent[] = [];
    try {
      for await (const response of runner.runTool({ toolName: "builtin.sleep", inputs: { ms } })) {
        if (!response.event) continue;
        events.push(response.event);
        if (response.event.event.case === "executionStarted") markStarted();
      }
    } finally {
      // A stream that ends before its run started fails the wait for it instead of hanging it.
      failStart(
        new Error(`the run of ${ms} ms ended before it started: ${events.map((event) => event.event.case).join(", ")}`),
      );
    }
    return events;
  })();
  return { started, done };
}

describe("Graceful shutdown of the server process", () => {
  it("on SIGTERM: health NOT_SERVING, new calls UNAVAILABLE, short runs finish, long runs cancelled, exit 0", async () => {
    const { child, grpcAddress: address, exited } = await startMainProcess(["--shutdown-grace-ms", "1500"]);
    const transport = createGrpcTransport({ baseUrl: `http://${address}` });
    const runner = createClient(RunnerService, transport);
    const health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", address) as HealthClient;
    const watch = health.Watch({ service: "" });
    const statuses: string[] = [];
    let markServing: () => void = () => undefined;
    const serving = new Promise<void>((resolve) => (markServing = resolve));
    const notServing = new Promise<void>((resolve, reject) => {
      watch.on("data", (message: { status: string }) => {
        statuses.push(message.status);
        if (message.status === "SERVING") markServing();
        if (message.status === "NOT_SERVING") resolve();
      });
      watch.on("error", (error: Error) =>
        reject(new Error(`health watch failed after ${statuses.join(", ")}: ${error.message}`)),
      );
    });

    const short = runAndCollect(runner, 400);
    const long = runAndCollect(runner, 600_000);
    // The watch must be connected (it reported SERVING) before the server stops listening.
    await Promise.all([short.started, long.started, serving]);
    child.kill("SIGTERM");
    await notServing;

    // A new connection is refused while the old one drains.
    const late = createClient(RegistryService, createGrpcTransport({ baseUrl: `http://${address}` }));
    const refusal = await late.getTool({ name: "builtin.echo" }).then(
      () => undefined,
      (error: unknown) => ConnectError.from(error),
    );
    expect(refusal?.code).to.equal(Code.Unavailable);

    const shortEvents = await short.done;
    const shortResult = shortEvents.at(-1)?.event;
    expect(shortResult?.case === "completed" && shortResult.value.result?.success).to.equal(true);
    const longEvents = await long.done;
    const longResult = longEvents.at(-1)?.event;
    expect(longResult?.case).to.equal("completed");
    if (longResult?.case === "completed") {
      expect(longResult.value.result?.error?.errorType).to.equal("CancelledError");
      expect(longResult.value.result?.error?.details).to.contain("the server is shutting down");
    }
    expect(await exited).to.equal(0);
    expect(statuses[0]).to.equal("SERVING");
    watch.cancel();
    health.close();
  });
});
