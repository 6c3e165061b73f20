import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { Client, ClientReadableStream, ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { performance } from "node:perf_hooks";
import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import { RegistryService, ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { startMainProcess } from "../support/main-process.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";

type HealthClient = Client & { Watch(request: { service: string }): ClientReadableStream<{ status: string }> };

/** How a stream ended, and when (performance.now()). */
interface StreamEnd {
  readonly name: string;
  readonly code: Code | "ok";
  readonly message: string;
  /** The error_type of the ToolError it carried, if any. */
  readonly errorType?: string | undefined;
  readonly atMs: number;
}

/**
 * Follows a server stream: `ready` resolves once `isReady` accepts a message (the stream is
 * established and caught up), `ended` with how and when the stream ended.
 */
function follow<T>(name: string, stream: AsyncIterable<T>, isReady: (message: T) => boolean) {
  let markReady: () => void = () => undefined;
  let failReady: (error: Error) => void = () => undefined;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  const ended = (async (): Promise<StreamEnd> => {
    try {
      for await (const message of stream) if (isReady(message)) markReady();
      return { name, code: "ok", message: "", atMs: performance.now() };
    } catch (error) {
      const connectError = ConnectError.from(error);
      const errorType = connectError.findDetails(ToolErrorSchema)[0]?.errorType;
      return { name, code: connectError.code, message: connectError.rawMessage, errorType, atMs: performance.now() };
    } finally {
      failReady(new Error(`${name} ended before it was ready`));
    }
  })();
  return { ready, ended };
}

/** The grpc.health.v1 Watch of the whole server, with grpc-js as a mesh's client would open it. */
function followHealth(address: string) {
  const health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", address) as HealthClient;
  const statuses: string[] = [];
  const watch = health.Watch({ service: "" });
  let markServing: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markServing = resolve));
  watch.on("data", (message: { status: string }) => {
    statuses.push(message.status);
    if (message.status === "SERVING") markServing();
  });
  const ended = new Promise<StreamEnd>((resolve) => {
    watch.on("error", (error: ServiceError) =>
      resolve({
        name: "grpc-js Health.Watch",
        code: error.code as number as Code,
        message: error.details,
        atMs: performance.now(),
      }),
    );
    watch.on("end", () => resolve({ name: "grpc-js Health.Watch", code: "ok", message: "", atMs: performance.now() }));
  });
  return { ready, ended, statuses, close: () => health.close() };
}

/** What each stream's client is told when shutdown ends it: how to pick up elsewhere. */
const endings = {
  health: "the server is shutting down: watch the health of another replica or of the restarted server",
  tools:
    "the server is shutting down: watch again from the last version seen, against another replica or the restarted server",
  executions:
    "the server is shutting down: watch again against another replica or the restarted server, which sends the live runs again",
};

/**
 * The 2025-era MCP notification stream (`GET /mcp`): ready once its opening comment arrived; it
 * has no status of its own, so its end is the response's body ending.
 */
function followMcpNotifications(httpUrl: string) {
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const ended = (async (): Promise<number> => {
    const response = await fetch(`${httpUrl}/mcp`, { headers: { accept: "text/event-stream" } });
    if (!response.body) throw new Error(`GET /mcp answered ${response.status} without a body`);
    for await (const chunk of response.body) if (Buffer.from(chunk).toString().includes("listening")) markReady();
    return performance.now();
  })();
  return { ready, ended };
}

const isSnapshotEnd = (response: { type: ToolChangeType }): boolean => response.type === ToolChangeType.SNAPSHOT_END;
const isCaughtUp = (response: { caughtUp: boolean }): boolean => response.caughtUp;

describe("Shutdown of a server process holding watch streams", () => {
  it("ends every idle watch stream at once with UNAVAILABLE on both ports, and exits within a second", async () => {
    // The default grace of 10 s: an idle replica must not wait it out.
    const { child, grpcAddress, httpUrl, exited, output } = await startMainProcess(["--shutdown-grace-ms", "10000"]);
    const grpcRegistry = createGrpcJsClient(RegistryService, grpcAddress);
    const grpcExecutions = createGrpcJsClient(ExecutionService, grpcAddress);
    const connect = createConnectTransport({ baseUrl: httpUrl, httpVersion: "1.1" });
    const grpcWeb = createGrpcWebTransport({ baseUrl: httpUrl, httpVersion: "1.1" });
    const health = followHealth(grpcAddress);
    const streams = [
      follow("grpc-js WatchTools", grpcRegistry.client.watchTools({}), isSnapshotEnd),
      follow("grpc-js WatchExecutions", grpcExecutions.client.watchExecutions({}), isCaughtUp),
      follow("Connect WatchTools", createClient(RegistryService, connect).watchTools({}), isSnapshotEnd),
      follow("Connect WatchExecutions", createClient(ExecutionService, connect).watchExecutions({}), isCaughtUp),
      follow("gRPC-Web WatchTools", createClient(RegistryService, grpcWeb).watchTools({}), isSnapshotEnd),
      follow("gRPC-Web WatchExecutions", createClient(ExecutionService, grpcWeb).watchExecutions({}), isCaughtUp),
    ];
    const mcp = followMcpNotifications(httpUrl);
    await Promise.all([health.ready, mcp.ready, ...streams.map((stream) => stream.ready)]);

    const signalledAtMs = performance.now();
    child.kill("SIGTERM");
    const ends = await Promise.all([health.ended, ...streams.map((stream) => stream.ended)]);
    const mcpEndMs = (await mcp.ended) - signalledAtMs;
    const exitCode = await exited;
    const exitMs = performance.now() - signalledAtMs;

    const seen = ends.map((end) => ({
      name: end.name,
      code: end.code,
      message: end.message,
      afterSignalMs: Math.round(end.atMs - signalledAtMs),
    }));
    const summary = `exit ${exitMs.toFixed(0)} ms after SIGTERM; streams: ${JSON.stringify(seen)}`;
    for (const end of seen) {
      expect(end.code, summary).to.equal(Code.Unavailable);
      expect(end.afterSignalMs, summary).to.be.below(1000);
    }
    expect(mcpEndMs, summary).to.be.below(1000);
    expect(ends.map((end) => [end.name, end.message, end.errorType])).to.deep.equal([
      ["grpc-js Health.Watch", endings.health, undefined],
      ["grpc-js WatchTools", endings.tools, "UnavailableError"],
      ["grpc-js WatchExecutions", endings.executions, "UnavailableError"],
      ["Connect WatchTools", endings.tools, "UnavailableError"],
      ["Connect WatchExecutions", endings.executions, "UnavailableError"],
      ["gRPC-Web WatchTools", endings.tools, "UnavailableError"],
      ["gRPC-Web WatchExecutions", endings.executions, "UnavailableError"],
    ]);
    // Health watchers hear NOT_SERVING before their stream ends.
    expect(health.statuses).to.deep.equal(["SERVING", "NOT_SERVING"]);
    expect(exitCode, output()).to.equal(0);
    expect(exitMs, summary).to.be.below(1000);
    grpcRegistry.close();
    grpcExecutions.close();
    health.close();
  });

  it("lets a run in flight complete during the grace while the idle streams end at once", async () => {
    const { child, grpcAddress, httpUrl, exited, output } = await startMainProcess(["--shutdown-grace-ms", "10000"]);
    const grpcRunner = createGrpcJsClient(RunnerService, grpcAddress);
    const grpcRegistry = createGrpcJsClient(RegistryService, grpcAddress);
    const connect = createConnectTransport({ baseUrl: httpUrl, httpVersion: "1.1" });
    const runMs = 1500;
    const runEvents: RunEvent[] = [];
    const run = follow(
      "grpc-js RunTool",
      (async function* () {
        for await (const response of grpcRunner.client.runTool({ toolName: "builtin.sleep", inputs: { ms: runMs } })) {
          if (response.event) runEvents.push(response.event);
          yield response;
        }
      })(),
      (response) => response.event?.event.case === "executionStarted",
    );
    await run.ready;
    const executionId = runEvents[0]?.executionId ?? "";
    const watchedEvents: RunEvent[] = [];
    const watcher = follow(
      "Connect WatchExecution",
      (async function* () {
        for await (const response of createClient(ExecutionService, connect).watchExecution({ executionId })) {
          if (response.event) watchedEvents.push(response.event);
          yield response;
        }
      })(),
      (response) => response.event?.event.case === "executionStarted",
    );
    const idle = follow("grpc-js WatchTools", grpcRegistry.client.watchTools({}), isSnapshotEnd);
    await Promise.all([watcher.ready, idle.ready]);

    const signalledAtMs = performance.now();
    child.kill("SIGTERM");
    const [idleEnd, runEnd, watcherEnd] = await Promise.all([idle.ended, run.ended, watcher.ended]);
    const exitCode = await exited;
    const exitMs = performance.now() - signalledAtMs;

    expect(idleEnd.code).to.equal(Code.Unavailable);
    expect(idleEnd.message).to.equal(endings.tools);
    // The idle stream did not wait for the run.
    expect(idleEnd.atMs).to.be.below(runEnd.atMs);
    // The run carried on during the grace and completed; both streams of it ended normally.
    expect(runEnd.code).to.equal("ok");
    expect(watcherEnd.code).to.equal("ok");
    for (const events of [runEvents, watchedEvents]) {
      const last = events.at(-1)?.event;
      expect(last?.case).to.equal("completed");
      if (last?.case === "completed") expect(last.value.result?.success).to.equal(true);
    }
    expect(exitCode, output()).to.equal(0);
    // Exits once the run is over, long before the grace would have ended.
    expect(exitMs).to.be.below(runMs + 1000);
    grpcRunner.close();
    grpcRegistry.close();
  });
});
