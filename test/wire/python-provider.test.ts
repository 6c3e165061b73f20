// A real Python tool provider (examples/python/provider_example.py, on grpcio) serving tools to a
// real server over the provider protocol, as a child process: its tools run from a Python grpcio
// client (RunTool), from curl (Connect JSON on the HTTP port), are cancelled through
// ExecutionService, and a provider killed mid-run leaves nothing behind.
import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError } from "../support/expect-error.js";
import { generatePythonStubs, python, repoRoot, type EventSeen, type RpcErrorSeen } from "../support/python-harness.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { startTestServer } from "../support/test-server.js";
import { PythonProviderProcess } from "../support/python-provider-process.js";

const execFileAsync = promisify(execFile);

const providerScript = path.join(repoRoot, "examples/python/provider_example.py");
const clientScript = path.join(repoRoot, "test/python/provider_client.py");

/** An event of provider_client.py: event_json's fields plus an output's chunk and a log's level. */
interface ProviderEventSeen extends EventSeen {
  readonly chunk?: unknown;
  readonly level?: string;
}

/** The Python provider as a child process, and what it printed so far. */
class PythonProvider extends PythonProviderProcess {
  constructor(stubsDir: string, grpcAddress: string) {
    super(python, [providerScript, stubsDir, grpcAddress], repoRoot);
  }
}

/** The result of a run's COMPLETED event (the last one). */
function completedResult(events: RunEvent[]) {
  const last = events.at(-1);
  expect(last?.event.case, "the last event").to.equal("completed");
  return last?.event.case === "completed" ? last.event.value.result : undefined;
}

/** Waits until the run reported progress (the provider is running it). */
async function untilProgress(client: ClientStack, executionId: string): Promise<void> {
  for await (const response of client.executions.watchExecution({ executionId })) {
    if (response.event?.event.case === "progress") return;
  }
  throw new Error("the run completed before reporting progress");
}

/** A POST of Connect JSON to the HTTP port with curl; returns the parsed answer. */
async function curlPost(httpUrl: string, method: string, body: unknown): Promise<Record<string, unknown>> {
  const { stdout } = await execFileAsync(
    "curl",
    [
      "-sS",
      "-H",
      "content-type: application/json",
      "-d",
      JSON.stringify(body),
      `${httpUrl}/toolruntime.v1.RunnerService/${method}`,
    ],
    { timeout: 20_000 },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe("A Python tool provider (examples/python)", function () {
  this.timeout(60_000);
  let server: RunningServer;
  let client: ClientStack;
  let stubsDir: string;
  let provider: PythonProvider;
  const children: PythonProvider[] = [];

  const startProvider = async (): Promise<PythonProvider> => {
    const started = new PythonProvider(stubsDir, server.grpcAddress);
    children.push(started);
    await started.waitFor("connected");
    return started;
  };

  before(async function () {
    server = await startTestServer({ providers: { heartbeatIntervalMs: 200, failureTimeoutMs: 1000 } });
    client = createClientStack("grpc-js", server);
    stubsDir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-provider-"));
    await generatePythonStubs(stubsDir);
    provider = await startProvider();
  });

  after(async function () {
    for (const child of children) child.kill();
    await Promise.all(children.map((child) => child.exited));
    client?.close();
    await server?.close(0);
    if (stubsDir) await rm(stubsDir, { recursive: true, force: true });
  });

  it("runs pyexample.word_count for a Python grpcio client with RunTool, with its lifecycle events", async function () {
    const text = "the quick brown fox jumps over the lazy dog again";
    const { stdout } = await execFileAsync(
      python,
      [clientScript, stubsDir, server.grpcAddress, "pyexample.word_count", JSON.stringify({ text, chunk_size: 4 })],
      { cwd: repoRoot, timeout: 50_000 },
    );
    const seen = JSON.parse(stdout) as { events: ProviderEventSeen[]; error: RpcErrorSeen | null };
    expect(seen.error).to.equal(null);
    const kinds = seen.events.map((event) => event.kind);
    expect(kinds[0]).to.equal("discovered");
    expect(seen.events[0]?.tool_name).to.equal("pyexample.word_count");
    expect(kinds.at(-1)).to.equal("completed");
    expect(kinds).to.include.members(["activated", "execution_started", "execution_finished", "deactivated"]);
    // Three chunks of words (4, 4, 2): three progress reports and three partial counts, in order.
    const progress = seen.events.filter((event) => event.kind === "progress");
    expect(progress.map((event) => event.fraction)).to.deep.equal([1 / 3, 2 / 3, 1]);
    expect(progress.at(-1)?.message).to.equal("counted 10 of 10 words");
    const chunks = seen.events.filter((event) => event.kind === "output").map((event) => event.chunk);
    expect(chunks).to.deep.equal([
      { chunk: 1, words_so_far: 4 },
      { chunk: 2, words_so_far: 8 },
      { chunk: 3, words_so_far: 10 },
    ]);
    const log = seen.events.find((event) => event.kind === "log");
    expect(log?.level).to.equal("info");
    expect(kinds.indexOf("progress")).to.be.above(kinds.indexOf("execution_started"));
    expect(kinds.lastIndexOf("output")).to.be.below(kinds.indexOf("execution_finished"));
    expect(seen.events.map((event) => event.sequence)).to.deep.equal(seen.events.map((_event, index) => index + 1));
    const result = seen.events.at(-1)?.result;
    expect(result?.success, JSON.stringify(result?.error)).to.equal(true);
    expect(result?.output).to.deep.equal({ words: 10, chunks: 3 });
  });

  it("runs pyexample.word_count through the HTTP port with curl (Connect JSON ActivateTool, ExecuteTool)", async function () {
    const activated = await curlPost(server.httpUrl, "ActivateTool", { toolName: "pyexample.word_count" });
    expect((activated["spec"] as { name?: string } | undefined)?.name).to.equal("pyexample.word_count");
    const executed = await curlPost(server.httpUrl, "ExecuteTool", {
      toolName: "pyexample.word_count",
      inputs: { text: "one two three four five six seven" },
    });
    const result = executed["result"] as { success?: boolean; output?: unknown; error?: unknown };
    expect(result.success, JSON.stringify(result.error)).to.equal(true);
    expect(result.output).to.deep.equal({ words: 7, chunks: 2 });
    expect(executed["executionId"]).to.be.a("string").that.is.not.empty;
  });

  it("delivers a cancellation to the Python provider, which stops the run", async function () {
    const started = await client.executions.startExecution({ toolName: "pyexample.wait", inputs: { seconds: 30 } });
    const executionId = started.execution?.executionId ?? "";
    await untilProgress(client, executionId);
    await provider.waitFor(`waiting ${executionId}`);
    await client.executions.cancelExecution({ executionId });
    const events = (await collect(client.executions.watchExecution({ executionId }))).map(
      (response) => response.event as RunEvent,
    );
    expect(completedResult(events)?.error?.errorType).to.equal("CancelledError");
    await provider.waitFor(`cancelled ${executionId}`);
    const stats = server.runtime.providers.stats();
    expect(stats.runsInFlight).to.equal(0);
    expect(stats.connections).to.equal(1);
  });

  it("exits with 0 on SIGTERM, and a provider SIGKILLed mid-run fails its run and leaves nothing behind", async function () {
    // The shared provider stops cleanly on SIGTERM.
    provider.child.kill("SIGTERM");
    const [code] = await provider.exited;
    expect(code, provider.stderr).to.equal(0);
    expect(provider.stdout).to.contain("stopped");

    const doomed = await startProvider();
    const started = await client.executions.startExecution({ toolName: "pyexample.wait", inputs: { seconds: 30 } });
    const executionId = started.execution?.executionId ?? "";
    await untilProgress(client, executionId);
    const killedAt = Date.now();
    doomed.child.kill("SIGKILL");
    await doomed.exited;
    const events = (await collect(client.executions.watchExecution({ executionId }))).map(
      (response) => response.event as RunEvent,
    );
    expect(completedResult(events)?.error?.errorType).to.equal("ProviderError");
    expect(Date.now() - killedAt).to.be.below(2000);
    const stats = server.runtime.providers.stats();
    expect(stats.connections).to.equal(0);
    expect(stats.runsInFlight).to.equal(0);
    expect(stats.waitingRuns).to.equal(0);
    expect(server.runtime.registries.default.get("pyexample.wait")).to.equal(undefined);
  });
});

describe("A Python provider behaves like an in-process tool and reconnects", function () {
  this.timeout(60_000);
  let server: RunningServer;
  let client: ClientStack;
  let stubsDir: string;
  let proxy: TcpProxy;
  let child: ChildProcessWithoutNullStreams;
  let stdout = "";
  const printed = new EventEmitter();

  /** Resolves once stdout holds `count` occurrences of `text`. */
  const untilPrinted = async (text: string, count = 1): Promise<void> => {
    while (stdout.split(text).length - 1 < count) await once(printed, "data");
  };
  const resultOf = async (toolName: string) => {
    const events = (await collect(client.runner.runTool({ toolName }))).map((response) => response.event as RunEvent);
    return completedResult(events);
  };

  before(async () => {
    server = await startTestServer({ providers: { heartbeatIntervalMs: 200, failureTimeoutMs: 1000 } });
    client = createClientStack("grpc-js", server);
    stubsDir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-fixture-"));
    await generatePythonStubs(stubsDir);
    proxy = await TcpProxy.start(server.grpcAddress);
    child = spawn(python, [path.join(repoRoot, "test/python/provider_fixture.py"), stubsDir, proxy.address], {
      cwd: repoRoot,
    });
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      printed.emit("data");
    });
    await untilPrinted("connected");
  });
  after(async () => {
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
    await proxy.close();
    client.close();
    await server.close(0);
    await rm(stubsDir, { recursive: true, force: true });
  });

  it("reports a raised exception as HandlerError, or as the type it declares, never as ProviderError", async () => {
    const thrown = await resultOf("pyfix.throws");
    expect(thrown?.error?.errorType).to.equal("HandlerError");
    expect(thrown?.error?.details).to.equal('handler of "pyfix.throws" failed: ValueError: disk full');
    const quota = await resultOf("pyfix.quota");
    expect(quota?.error?.errorType).to.equal("QuotaExceeded");
    expect(quota?.error?.details).to.equal('handler of "pyfix.quota" failed: QuotaExceeded: over the daily quota');
  });

  it("fails a handler that returns None as an in-process handler that returns nothing", async () => {
    const result = await resultOf("pyfix.nothing");
    expect(result?.error?.errorType).to.equal("OutputValidationError");
    expect(result?.error?.details).to.equal(
      'handler of "pyfix.nothing" returned invalid output: output is undefined: it must be a JSON object',
    );
  });

  it("refuses to send a token in clear to another machine", () => {
    expect(stdout).to.contain(
      "refused: refusing to send the token in clear to '10.1.2.3:50051': pass root_certificates (TLS), or allow_insecure_token=True on a network you trust",
    );
  });

  it("reconnects after its connection drops, announces its tools again, and runs them", async () => {
    const abort = new AbortController();
    const watch = client.registry.watchTools({}, { signal: abort.signal })[Symbol.asyncIterator]();
    const until = async (type: ToolChangeType): Promise<void> => {
      for (;;) {
        const next = await watch.next();
        if (next.done) throw new Error("the watch ended");
        if (
          next.value.type === type &&
          (type === ToolChangeType.SNAPSHOT_END || next.value.spec?.name === "pyfix.upper")
        )
          return;
      }
    };
    await until(ToolChangeType.SNAPSHOT_END);
    proxy.pause();
    await until(ToolChangeType.REMOVED);
    await expectToolError(
      client.registry.getTool({ name: "pyfix.upper" }),
      Code.Unavailable,
      "ProviderUnavailableError",
      'tool "pyfix.upper" is served by provider "pyfix", which is not connected',
    );
    proxy.resume();
    await until(ToolChangeType.ADDED);
    abort.abort();
    await untilPrinted("connected", 2);
    const result = await resultOf("pyfix.upper");
    expect(result?.success, result?.error?.details).to.equal(true);
  });
});
