import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Client, ClientDuplexStream, ClientReadableStream, ServiceError } from "@grpc/grpc-js";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { expect } from "chai";
import { execFile } from "node:child_process";
import { once } from "node:events";
import http2 from "node:http2";
import { createRequire } from "node:module";
import path from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { pino } from "pino";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";
import { startTestServer } from "../support/test-server.js";

const run = promisify(execFile);
const reflectionProtoDir = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@grpc/reflection/package.json")),
  "build/proto/grpc/reflection",
);

type HealthClient = Client & {
  Check(
    request: { service: string },
    callback: (error: ServiceError | null, response?: { status: string }) => void,
  ): void;
  Watch(request: { service: string }): ClientReadableStream<{ status: string }>;
};

/** Log lines written by a pino logger, parsed. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "debug" }, stream), lines };
}

describe("Operations: health, reflection, metrics, traces, logs, connection limits", () => {
  let server: RunningServer;
  let health: HealthClient;
  const spans = new InMemorySpanExporter();
  const log = capturingLogger();
  const audit = capturingLogger();

  before(async () => {
    server = await startTestServer({
      logger: log.logger,
      auditLogger: audit.logger,
      tracing: { spanProcessors: [new SimpleSpanProcessor(spans)] },
      connection: { maxConcurrentStreams: 77 },
    });
    health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", server.grpcAddress) as HealthClient;
  });
  after(async () => {
    health.close();
    await server.close(0);
  });

  const check = (service: string) =>
    new Promise<string>((resolve, reject) =>
      health.Check({ service }, (error, response) => (error ? reject(error) : resolve(response?.status ?? ""))),
    );

  it("reports SERVING through grpc.health.v1 for the server and each service, NOT_FOUND for others", async () => {
    expect(await check("")).to.equal("SERVING");
    expect(await check("toolruntime.v1.RegistryService")).to.equal("SERVING");
    expect(await check("toolruntime.v1.RunnerService")).to.equal("SERVING");
    const error = await check("no.such.Service").catch((failure: ServiceError) => failure);
    expect((error as ServiceError).code).to.equal(5);
  });

  it("answers /healthz and /readyz on the HTTP port", async () => {
    const live = await fetch(`${server.httpUrl}/healthz`);
    expect(live.status).to.equal(200);
    const ready = await fetch(`${server.httpUrl}/readyz`);
    expect(ready.status).to.equal(200);
    expect(await ready.text()).to.equal("ready\n");
  });

  it("lists services and calls a method through reflection with buf curl, without the proto files", async () => {
    const base = `http://${server.grpcAddress}`;
    const flags = ["--protocol", "grpc", "--http2-prior-knowledge"];
    const services = await run("npx", ["--no-install", "buf", "curl", ...flags, "--list-services", base]);
    expect(services.stdout.split("\n")).to.include.members([
      "toolruntime.v1.RegistryService",
      "toolruntime.v1.RunnerService",
    ]);
    const methods = await run("npx", ["--no-install", "buf", "curl", ...flags, "--list-methods", base]);
    expect(methods.stdout).to.contain("toolruntime.v1.RunnerService/RunTool");
    const call = await run("npx", [
      "--no-install",
      "buf",
      "curl",
      ...flags,
      "-d",
      '{"toolName":"builtin.countdown","inputs":{"from":2,"interval_ms":1}}',
      `${base}/toolruntime.v1.RunnerService/RunTool`,
    ]);
    expect(call.stdout).to.contain('"completed"');
    expect(call.stdout).to.contain('"counted": 2');
  });

  it("reflects grpc.health.v1, so buf curl lists, describes and calls it without the proto files", async () => {
    const base = `http://${server.grpcAddress}`;
    const flags = ["--protocol", "grpc", "--http2-prior-knowledge"];
    const services = await run("npx", ["--no-install", "buf", "curl", ...flags, "--list-services", base]);
    expect(services.stdout.split("\n")).to.include("grpc.health.v1.Health");
    const methods = await run("npx", ["--no-install", "buf", "curl", ...flags, "--list-methods", base]);
    expect(methods.stdout.split("\n")).to.include.members([
      "grpc.health.v1.Health/Check",
      "grpc.health.v1.Health/Watch",
      "grpc.health.v1.Health/List",
    ]);
    const check = await run("npx", [
      "--no-install",
      "buf",
      "curl",
      ...flags,
      "-d",
      '{"service":"toolruntime.v1.RunnerService"}',
      `${base}/grpc.health.v1.Health/Check`,
    ]);
    expect(JSON.parse(check.stdout)).to.deep.equal({ status: "SERVING" });
  });

  it("answers reflection v1alpha too, for clients that only speak it", async () => {
    const client = createProtoLoaderClient(
      path.join(reflectionProtoDir, "v1alpha/reflection.proto"),
      "grpc.reflection.v1alpha.ServerReflection",
      server.grpcAddress,
    ) as Client & {
      ServerReflectionInfo(): ClientDuplexStream<unknown, { list_services_response?: { service: { name: string }[] } }>;
    };
    const stream = client.ServerReflectionInfo();
    stream.write({ list_services: "*" });
    const [response] = (await once(stream, "data")) as [{ list_services_response?: { service: { name: string }[] } }];
    stream.end();
    client.close();
    expect(response.list_services_response?.service.map((service) => service.name)).to.include(
      "toolruntime.v1.RunnerService",
    );
  });

  it("continues the caller's W3C trace: the run's metadata and spans carry its trace id", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parentSpanId = "00f067aa0ba902b7";
    const runner = createClient(RunnerService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
    const headers = { traceparent: `00-${traceId}-${parentSpanId}-01` };
    await runner.activateTool({ runner: "traced", toolName: "builtin.echo" }, { headers });
    const { result } = await runner.executeTool(
      { runner: "traced", toolName: "builtin.echo", inputs: { secret: "hunter2" } },
      { headers },
    );
    expect(result?.metadata?.["trace_id"]).to.equal(traceId);
    const finished = spans.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
    const callSpan = finished.find((span) => span.name === "toolruntime.v1.RunnerService/ExecuteTool");
    const runSpan = finished.find((span) => span.name === "run builtin.echo");
    expect(callSpan?.parentSpanContext?.spanId).to.equal(parentSpanId);
    expect(runSpan?.parentSpanContext?.spanId).to.equal(callSpan?.spanContext().spanId);
    expect(runSpan?.attributes["toolruntime.outcome"]).to.equal("success");
  });

  it("logs one line per call and per run, without input values, and audits each execution", () => {
    const runs = log.lines.filter(
      (line) => line["msg"] === "run" && line["tool"] === "builtin.echo" && line["runner"] === "traced",
    );
    expect(runs).to.have.length(1);
    expect(runs[0]).to.include({ outcome: "success", caller: "anonymous" });
    expect(JSON.stringify(log.lines)).to.not.contain("hunter2");
    const calls = log.lines.filter(
      (line) => line["msg"] === "call" && line["rpc"] === "toolruntime.v1.RunnerService/ExecuteTool",
    );
    expect(calls.length).to.be.at.least(1);
    expect(calls[0]).to.include({ code: "OK" });
    const records = audit.lines.filter((line) => line["audit"] === "execution" && line["tool"] === "builtin.echo");
    expect(records.length).to.be.at.least(1);
    expect(records.at(-1)?.["inputsSha256"]).to.match(/^[0-9a-f]{64}$/);
    expect(records.at(-1)).to.include({ caller: "anonymous", writes: false, outcome: "success" });
  });

  it("exposes Prometheus metrics that count the calls and runs just made", async () => {
    const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
    expect(text).to.match(
      /toolruntime_rpc_requests_total\{service="toolruntime\.v1\.RunnerService",method="ExecuteTool",protocol="connect",code="OK"\} [1-9]/,
    );
    expect(text).to.match(/toolruntime_executions_total\{tool="builtin\.echo",outcome="success"\} [1-9]/);
    expect(text).to.match(/toolruntime_registry_tools\{registry="default"\} [1-9]/);
    expect(text).to.contain("toolruntime_executions_in_flight 0");
    expect(text).to.contain("toolruntime_executions_queued 0");
    expect(text).to.contain("toolruntime_execution_duration_seconds_bucket");
  });

  it("advertises the configured stream limit on both ports", async () => {
    for (const url of [`http://${server.grpcAddress}`, server.httpUrl]) {
      const session = http2.connect(url);
      await once(session, "remoteSettings");
      expect(session.remoteSettings.maxConcurrentStreams, url).to.equal(77);
      session.close();
    }
  });

  it("turns health NOT_SERVING for watchers as soon as shutdown begins", async () => {
    const watch = health.Watch({ service: "" });
    const statuses: string[] = [];
    const sawNotServing = new Promise<void>((resolve) => {
      watch.on("data", (message: { status: string }) => {
        statuses.push(message.status);
        if (message.status === "SERVING") void server.close(0);
        if (message.status === "NOT_SERVING") resolve();
      });
      watch.on("error", () => resolve());
    });
    await sawNotServing;
    watch.cancel();
    expect(statuses.slice(0, 2)).to.deep.equal(["SERVING", "NOT_SERVING"]);
  });
});
