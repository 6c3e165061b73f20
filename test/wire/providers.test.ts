import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { spawn } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { ConnectRequestSchema, ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { createProvider, type Provider } from "../../src/providers/create-provider.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

const seenByProvider: string[] = [];
/** Emits "cancelled" (label) when a provider's handler sees its run cancelled. */
const providerEvents = new EventEmitter();

/** Tools a test provider serves, in the "remote" namespace. */
const remoteTools = (label: string) => [
  defineTool({
    name: "remote.upper",
    description: "Upper-cases inputs.text, reporting progress, a log line and a chunk of output.",
    outputSchema: { type: "object", required: ["text"] },
    handler: (inputs, context) => {
      seenByProvider.push(label);
      context.reportProgress({ fraction: 0.5, message: "half way" });
      context.log("info", `served by ${label}`);
      context.emitOutput({ partial: true });
      const text = typeof inputs["text"] === "string" ? inputs["text"] : "";
      return { text: text.toUpperCase(), by: label };
    },
  }),
  defineTool({
    name: "remote.wait",
    description: "Waits inputs.ms, or until cancelled (then reports it).",
    handler: (inputs, context) =>
      new Promise((resolve, reject) => {
        seenByProvider.push(label);
        const timer = setTimeout(() => resolve({ by: label }), Number(inputs["ms"] ?? 0));
        context.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          seenByProvider.push(`${label}:cancelled`);
          providerEvents.emit("cancelled", label);
          reject(new Error("cancelled"));
        });
      }),
  }),
  defineTool({
    name: "remote.bad",
    description: "Returns output that breaks its schema.",
    outputSchema: { type: "object", required: ["x"] },
    handler: () => ({ y: 1 }),
  }),
];

describe("Tool providers over the provider protocol", () => {
  let server: RunningServer;
  let client: ClientStack;
  let provider: Provider;

  before(async () => {
    server = await startTestServer({ providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 400 } });
    client = createClientStack("grpc-js", server);
    provider = createProvider({
      address: server.grpcAddress,
      providerName: "remote",
      tools: remoteTools("first"),
      maxConcurrency: 4,
    });
    await provider.connected;
  });
  after(async () => {
    provider.close();
    client.close();
    await server.close(0);
  });

  const run = async (toolName: string, inputs = {}): Promise<RunEvent[]> =>
    (await collect(client.runner.runTool({ toolName, inputs }))).map((response) => response.event as RunEvent);
  const resultOf = (events: RunEvent[]) => {
    const last = events.at(-1)?.event;
    if (last?.case !== "completed" || !last.value.result) throw new Error("no result");
    return last.value.result;
  };

  it("registers the provider's tools with a handler and runs them end to end with progress, logs and output", async () => {
    const { spec } = await client.registry.getTool({ name: "remote.upper" });
    expect(spec?.hasHandler).to.equal(true);
    const events = await run("remote.upper", { text: "hello" });
    const kinds = events.map((event) => event.event.case);
    expect(kinds).to.include.members(["progress", "log", "output"]);
    expect(resultOf(events).output).to.deep.equal({ text: "HELLO", by: "first" });
  });

  it("checks a provider's output against the tool's output schema like an in-process handler's", async () => {
    const result = resultOf(await run("remote.bad"));
    expect(result.error?.errorType).to.equal("OutputValidationError");
  });

  it("carries a cancellation to the provider", async () => {
    const started = await client.executions.startExecution({ toolName: "remote.wait", inputs: { ms: 60_000 } });
    const executionId = started.execution?.executionId ?? "";
    for await (const response of client.executions.watchExecution({ executionId })) {
      if (response.event?.event.case === "executionStarted") break;
    }
    const cancelledAtProvider = once(providerEvents, "cancelled");
    await client.executions.cancelExecution({ executionId });
    const events = (await collect(client.executions.watchExecution({ executionId }))).map(
      (response) => response.event as RunEvent,
    );
    expect(resultOf(events).error?.errorType).to.equal("CancelledError");
    const [label] = (await cancelledAtProvider) as [string];
    expect(label).to.equal("first");
  });

  it("balances runs across two connections of one provider", async () => {
    const second = createProvider({
      address: server.grpcAddress,
      providerName: "remote",
      tools: remoteTools("second"),
      maxConcurrency: 4,
    });
    await second.connected;
    seenByProvider.length = 0;
    await Promise.all(Array.from({ length: 6 }, () => run("remote.wait", { ms: 50 })));
    expect(seenByProvider.filter((label) => label === "first").length).to.be.at.least(1);
    expect(seenByProvider.filter((label) => label === "second").length).to.be.at.least(1);
    second.close();
    await second.closed;
  });

  it("keeps a stuck provider from holding its run past the timeout or blocking other runs", async () => {
    const stuck = createProvider({
      address: server.grpcAddress,
      providerName: "stuck",
      tools: [defineTool({ name: "stuck.forever", handler: () => new Promise(() => undefined) })],
    });
    await stuck.connected;
    const stuckRun = collect(client.runner.runTool({ toolName: "stuck.forever", timeoutMs: 200 }));
    const meanwhile = await run("remote.upper", { text: "still here" });
    expect(resultOf(meanwhile).output).to.deep.include({ text: "STILL HERE" });
    const stuckEvents = (await stuckRun).map((response) => response.event as RunEvent);
    expect(resultOf(stuckEvents).error?.errorType).to.equal("TimeoutError");
    expect(server.runtime.providers.stats().runsInFlight).to.equal(0);
    stuck.close();
    await stuck.closed;
  });

  it("refuses a provider that would take over a built-in tool's name with ALREADY_EXISTS", async () => {
    const thief = createProvider({
      address: server.grpcAddress,
      providerName: "thief",
      tools: [defineTool({ name: "builtin.echo", handler: () => ({}) })],
    });
    let failure: unknown;
    try {
      await thief.connected;
    } catch (error) {
      failure = error;
    }
    expect(ConnectError.from(failure).code).to.equal(Code.AlreadyExists);
    thief.close();
  });

  it("refuses a stream that does not start with hello, and rejects results for runs it was not assigned", async () => {
    const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    const heartbeatFirst = [create(ConnectRequestSchema, { message: { case: "heartbeat", value: {} } })];
    const wrongFirst = raw.connect(toAsync(heartbeatFirst))[Symbol.asyncIterator]();
    await expectToolError(wrongFirst.next(), Code.InvalidArgument, "InvalidRequestError", "must be hello");

    const abort = new AbortController();
    const requests = (async function* () {
      yield create(ConnectRequestSchema, {
        message: { case: "hello", value: { providerName: "stranger", tools: [{ name: "stranger.tool" }] } },
      });
      yield create(ConnectRequestSchema, {
        message: { case: "result", value: { executionId: "not-assigned", output: { x: 1 } } },
      });
      await once(abort.signal, "abort");
    })();
    const kinds: string[] = [];
    for await (const response of raw.connect(requests, { signal: abort.signal })) {
      kinds.push(response.message.case ?? "");
      if (response.message.case === "rejected") {
        expect(response.message.value.reason).to.contain("not assigned");
        abort.abort();
        break;
      }
    }
    expect(kinds.slice(0, 2)).to.deep.equal(["welcome", "rejected"]);
  });

  it("ends the runs of a provider that disconnects with a ProviderError and removes its tools", async () => {
    const leaving = createProvider({
      address: server.grpcAddress,
      providerName: "leaving",
      tools: [defineTool({ name: "leaving.wait", handler: () => new Promise(() => undefined) })],
    });
    await leaving.connected;
    const started = await client.executions.startExecution({ toolName: "leaving.wait" });
    const executionId = started.execution?.executionId ?? "";
    for await (const response of client.executions.watchExecution({ executionId })) {
      if (response.event?.event.case === "executionStarted") break;
    }
    leaving.close();
    const events = (await collect(client.executions.watchExecution({ executionId }))).map(
      (response) => response.event as RunEvent,
    );
    expect(resultOf(events).error?.errorType).to.equal("ProviderError");
    await expectToolError(
      client.registry.getTool({ name: "leaving.wait" }),
      Code.Unavailable,
      "ProviderUnavailableError",
    );
  });

  it("fails a run promptly when its provider process is killed, leaving no run, stream or tool behind", async () => {
    const child = spawn(process.execPath, ["dist/test/support/provider-process.js", server.grpcAddress]);
    const exited = once(child, "exit");
    let output = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("connected")) resolve();
      });
      child.once("exit", () => reject(new Error(`provider exited: ${output}`)));
    });
    const started = await client.executions.startExecution({ toolName: "remote.block" });
    const executionId = started.execution?.executionId ?? "";
    for await (const response of client.executions.watchExecution({ executionId })) {
      if (response.event?.event.case === "progress") break;
    }
    const killedAt = Date.now();
    child.kill("SIGKILL");
    await exited;
    const events = (await collect(client.executions.watchExecution({ executionId }))).map(
      (response) => response.event as RunEvent,
    );
    const result = resultOf(events);
    expect(result.error?.errorType).to.equal("ProviderError");
    expect(Date.now() - killedAt).to.be.below(2000);
    const stats = server.runtime.providers.stats();
    expect(stats.runsInFlight).to.equal(0);
    expect(stats.waitingRuns).to.equal(0);
    expect(server.runtime.registries.default.get("remote.block")).to.equal(undefined);
    expect(server.runtime.executions.admission.running).to.equal(0);
  });

  it("treats a provider that falls silent as dead after the failure timeout", async () => {
    const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    const silence = new AbortController();
    const requests = (async function* () {
      yield create(ConnectRequestSchema, {
        message: { case: "hello", value: { providerName: "silent", tools: [{ name: "silent.tool" }] } },
      });
      await once(silence.signal, "abort");
    })();
    let failure: unknown;
    const started = Date.now();
    try {
      for await (const response of raw.connect(requests)) void response;
    } catch (error) {
      failure = error;
    }
    silence.abort();
    expect(ConnectError.from(failure).code).to.equal(Code.Unavailable);
    expect(Date.now() - started).to.be.within(300, 3000);
    expect(server.runtime.registries.default.get("silent.tool")).to.equal(undefined);
  });
});

/** The items of an array as an async iterable, as a client stream needs them. */
async function* toAsync<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) yield await Promise.resolve(item);
}
