// Provider overhead, in one process: the same no-op tool served in-process and by a TypeScript
// provider over the provider protocol, called the same way (unary ExecuteTool over grpc-js,
// sequential and with 16 in flight), interleaved over rounds; plus the time to detect a provider
// that vanished (its stream closed) and one that fell silent (no heartbeats).
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { once } from "node:events";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { performance } from "node:perf_hooks";
import { pino } from "pino";
import { ConnectRequestSchema, ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { createProvider } from "../../src/providers/create-provider.js";
import { startServer } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";

const calls = process.argv.includes("--full") ? 5000 : 1500;
const rounds = 3;
const failureTimeoutMs = 1000;
const server = await startServer({
  grpcPort: 0,
  httpPort: 0,
  logger: pino({ level: "silent" }),
  tools: builtinTools,
  providers: { heartbeatIntervalMs: 250, failureTimeoutMs },
});
const provider = createProvider({
  address: server.grpcAddress,
  providerName: "bench",
  maxConcurrency: 64,
  tools: [defineTool({ name: "remote.noop", handler: () => ({}) })],
});
await provider.connected;
const runner = createClient(RunnerService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
for (const toolName of ["builtin.noop", "remote.noop"]) await runner.activateTool({ toolName });

async function callsPerSecond(toolName: string, inFlight: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < calls) {
        const { result } = await runner.executeTool({ toolName });
        if (!result?.success) throw new Error(`${toolName} failed: ${result?.error?.details}`);
      }
    }),
  );
  return calls / ((performance.now() - started) / 1000);
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const rows: string[] = [];
for (const inFlight of [1, 16]) {
  const local: number[] = [];
  const remote: number[] = [];
  await callsPerSecond("builtin.noop", inFlight); // warm-up
  await callsPerSecond("remote.noop", inFlight);
  for (let round = 0; round < rounds; round++) {
    local.push(await callsPerSecond("builtin.noop", inFlight));
    remote.push(await callsPerSecond("remote.noop", inFlight));
  }
  const ratios = local.map((value, index) => (remote[index] ?? 0) / value);
  rows.push(
    `| ExecuteTool, ${inFlight} in flight: provider calls/s ÷ in-process calls/s | ${median(remote).toFixed(0)} | ${median(local).toFixed(0)} | ${median(ratios).toFixed(2)}× |`,
  );
}

// Detection: a provider whose stream closes (as when its process is killed), measured from the
// close; and one that falls silent, measured from its last message.
async function vanishedDetectionMs(): Promise<number> {
  const gone = createProvider({
    address: server.grpcAddress,
    providerName: "vanishing",
    tools: [defineTool({ name: "vanishing.block", handler: () => new Promise(() => undefined) })],
  });
  await gone.connected;
  await runner.activateTool({ toolName: "vanishing.block" });
  const pending = runner.executeTool({ toolName: "vanishing.block" });
  while (server.runtime.providers.stats().runsInFlight === 0) await new Promise((resolve) => setImmediate(resolve));
  const started = performance.now();
  gone.close();
  const { result } = await pending;
  if (result?.error?.errorType !== "ProviderError")
    throw new Error(`expected a ProviderError, got ${result?.error?.errorType}`);
  return performance.now() - started;
}

async function silentDetectionMs(): Promise<number> {
  const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
  let lastSent = 0;
  const stop = new AbortController();
  const requests = (async function* () {
    lastSent = performance.now();
    yield create(ConnectRequestSchema, {
      message: { case: "hello", value: { providerName: "silent", tools: [{ name: "silent.block" }] } },
    });
    await once(stop.signal, "abort");
  })();
  const stream = (async () => {
    try {
      for await (const response of raw.connect(requests)) void response;
    } catch {
      // UNAVAILABLE: declared dead.
    }
  })();
  while (!server.runtime.registries.default.get("silent.block")) await new Promise((resolve) => setImmediate(resolve));
  await runner.activateTool({ toolName: "silent.block" });
  const { result } = await runner.executeTool({ toolName: "silent.block" });
  const detected = performance.now() - lastSent;
  stop.abort();
  await stream;
  if (result?.error?.errorType !== "ProviderError")
    throw new Error(`expected a ProviderError, got ${result?.error?.errorType}`);
  return detected;
}
const vanished = await vanishedDetectionMs();
const silent = await silentDetectionMs();
console.log(`| measure | ours | baseline | ratio |
| --- | --- | --- | --- |
${rows.join("\n")}
| provider vanished (stream closed) → run ends with ProviderError | ${vanished.toFixed(1)} ms | | |
| provider silent (no heartbeats) → run ends with ProviderError | ${silent.toFixed(0)} ms | failure timeout ${failureTimeoutMs} ms | ${(silent / failureTimeoutMs).toFixed(2)}× |`);
provider.close();
await server.close(0);
