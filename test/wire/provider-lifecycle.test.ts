// A provider tool behaves like an in-process tool (errors, JSON checks, nothing returned); a silent
// provider is declared dead at its failure timeout; a dropped provider reconnects with its tools and
// its activations; providers speak TLS and mutual TLS and never send a token in clear; a draining
// provider finishes or hands back its runs.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { EventEmitter, once } from "node:events";
import { ConnectRequestSchema, ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import { ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { createProvider, type Provider, type ProviderEvent } from "../../src/providers/create-provider.js";
import { reconnectDelayMs } from "../../src/providers/reconnect-delay.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { createTestPki, type TestPki } from "../support/certificates.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError } from "../support/expect-error.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { startTestServer } from "../support/test-server.js";

/** An error with an error type of its own, as a provider's handler may throw. */
class QuotaExceeded extends Error {
  override readonly name = "QuotaExceeded";
  readonly errorType = "QuotaExceeded";
}

/** The same misbehaving handlers, served in process ("local.*") and by a provider ("remote.*"). */
const handlers = {
  throws: () => {
    throw new Error("disk full");
  },
  quota: () => {
    throw new QuotaExceeded("over the daily quota");
  },
  date: () => ({ at: new Date(0) }),
  nothing: () => undefined,
  // About 1 MB of JSON, 5.5 MB as protobuf: over the message limit once encoded.
  zeros: () => ({ list: new Array<number>(500_000).fill(0) }),
  zeros_chunk: (_inputs: unknown, context: { emitOutput(chunk: never): void }) => {
    try {
      context.emitOutput(new Array<number>(200_000).fill(0) as never);
      return { chunk: "accepted" };
    } catch (error) {
      return { chunk: (error as Error).message };
    }
  },
  bad_chunk: (_inputs: unknown, context: { emitOutput(chunk: never): void }) => {
    try {
      context.emitOutput(new Date(0) as never);
      return { chunk: "accepted" };
    } catch (error) {
      return { chunk: (error as Error).message };
    }
  },
};
const toolsIn = (namespace: string) =>
  Object.entries(handlers).map(([name, handler]) => defineTool({ name: `${namespace}.${name}`, handler }));

/** Runs a tool with RunTool and returns its result. */
async function resultOf(client: ClientStack, toolName: string, token?: string): Promise<ToolResult> {
  const headers = token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } };
  const events = (await collect(client.runner.runTool({ toolName, inputs: { a: 1 } }, headers))).map(
    (response) => response.event as RunEvent,
  );
  const last = events.at(-1)?.event;
  if (last?.case !== "completed" || !last.value.result) throw new Error("no result");
  return last.value.result;
}

/** Resolves with each event a provider reports, by kind. */
function eventsOf(): { emitter: EventEmitter; onEvent: (event: ProviderEvent) => void } {
  const emitter = new EventEmitter();
  return { emitter, onEvent: (event) => emitter.emit(event.kind, event) };
}

describe("A provider tool behaves like an in-process tool", () => {
  let server: RunningServer;
  let client: ClientStack;
  let provider: Provider;

  before(async () => {
    server = await startTestServer({
      tools: [...builtinTools, ...toolsIn("local")],
      providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 1000 },
    });
    client = createClientStack("grpc-js", server);
    provider = createProvider({ address: server.grpcAddress, providerName: "remote", tools: toolsIn("remote") });
    await provider.connected;
  });
  after(async () => {
    provider.close();
    await provider.closed;
    client.close();
    await server.close(0);
  });

  // A declared error type ("quota") is the one thing a provider's handler can say that a thrown Error cannot.
  for (const name of Object.keys(handlers).filter((key) => key !== "quota")) {
    it(`gives the same result for "${name}" in a provider as in process`, async () => {
      const local = await resultOf(client, `local.${name}`);
      const remote = await resultOf(client, `remote.${name}`);
      expect(remote.success).to.equal(local.success);
      expect(remote.output).to.deep.equal(local.output);
      expect(remote.error?.errorType).to.equal(local.error?.errorType);
      expect(remote.error?.details).to.equal(local.error?.details.replace(`"local.${name}"`, `"remote.${name}"`));
    });
  }

  it("refuses output and chunks too large once encoded, in a provider as in process", async () => {
    const remote = await resultOf(client, "remote.zeros");
    expect(remote.error?.errorType).to.equal("OutputValidationError");
    expect(remote.error?.details).to.contain("once encoded as protobuf");
    const chunk = await resultOf(client, "remote.zeros_chunk");
    expect(chunk.output?.["chunk"]).to.match(/^output chunk is larger than the limit of 1048576 bytes once encoded/);
    // The provider is still connected: its stream did not fail on a message over the limit.
    expect((await resultOf(client, "remote.throws")).error?.errorType).to.equal("HandlerError");
  });

  it("reports a handler that throws as HandlerError, not ProviderError", async () => {
    const result = await resultOf(client, "remote.throws");
    expect(result.error?.errorType).to.equal("HandlerError");
    expect(result.error?.details).to.equal('handler of "remote.throws" failed: disk full');
  });

  it("keeps the error type a provider's handler declares", async () => {
    const result = await resultOf(client, "remote.quota");
    expect(result.error?.errorType).to.equal("QuotaExceeded");
    expect(result.error?.details).to.equal('handler of "remote.quota" failed: QuotaExceeded: over the daily quota');
  });

  it("refuses a Date in the output as an in-process run does, and a handler that returns nothing", async () => {
    const dated = await resultOf(client, "remote.date");
    expect(dated.error?.errorType).to.equal("OutputValidationError");
    expect(dated.error?.details).to.equal(
      'handler of "remote.date" returned invalid output: output.at is a Date: only plain objects and arrays are JSON',
    );
    const nothing = await resultOf(client, "remote.nothing");
    expect(nothing.error?.errorType).to.equal("OutputValidationError");
    expect(nothing.error?.details).to.equal(
      'handler of "remote.nothing" returned invalid output: output is undefined: it must be a JSON object',
    );
  });

  it("does not let a provider claim one of the runtime's own error types", async () => {
    const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    const abort = new AbortController();
    const outgoing: ReturnType<typeof create<typeof ConnectRequestSchema>>[] = [];
    let push: (() => void) | undefined;
    const requests = (async function* () {
      yield create(ConnectRequestSchema, {
        message: { case: "hello", value: { providerName: "liar", tools: [{ name: "liar.tool" }] } },
      });
      for (;;) {
        while (outgoing.length > 0) yield outgoing.shift() as (typeof outgoing)[number];
        await new Promise<void>((resolve) => (push = resolve));
      }
    })();
    let welcomed: () => void = () => undefined;
    const welcome = new Promise<void>((resolve) => (welcomed = resolve));
    const served = (async () => {
      try {
        for await (const response of raw.connect(requests, { signal: abort.signal })) {
          if (response.message.case === "welcome") welcomed();
          if (response.message.case !== "assign") continue;
          outgoing.push(
            create(ConnectRequestSchema, {
              message: {
                case: "result",
                value: {
                  executionId: response.message.value.executionId,
                  error: { errorType: "TimeoutError", details: "it took too long" },
                },
              },
            }),
          );
          push?.();
        }
      } catch {
        // The stream ends when the test aborts it.
      }
    })();
    await welcome;
    const result = await resultOf(client, "liar.tool");
    abort.abort();
    await served;
    expect(result.error?.errorType).to.equal("HandlerError");
    expect(result.error?.details).to.equal('handler of "liar.tool" failed: TimeoutError: it took too long');
  });
});

describe("Provider liveness", () => {
  it("declares a silent provider dead at its failure timeout, not a heartbeat tick later", async () => {
    // A heartbeat interval far above a third of the failure timeout: silence is checked by its own timer.
    const failureTimeoutMs = 900;
    const server = await startTestServer({ providers: { heartbeatIntervalMs: 5000, failureTimeoutMs } });
    try {
      const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
      const silence = new AbortController();
      const requests = (async function* () {
        yield create(ConnectRequestSchema, {
          message: { case: "hello", value: { providerName: "silent", tools: [{ name: "silent.tool" }] } },
        });
        await once(silence.signal, "abort");
      })();
      let welcomedAt = 0;
      let failure: unknown;
      try {
        for await (const response of raw.connect(requests)) {
          if (response.message.case === "welcome") welcomedAt = performance.now();
        }
      } catch (error) {
        failure = error;
      }
      const detectedAfter = performance.now() - welcomedAt;
      silence.abort();
      expect(ConnectError.from(failure).code).to.equal(Code.Unavailable);
      expect(ConnectError.from(failure).rawMessage).to.equal(
        `provider "silent" sent nothing for ${failureTimeoutMs} ms: it is considered dead`,
      );
      // The server last heard the provider just before it sent the welcome. The upper bound leaves
      // room for a loaded machine and still lies far below the next heartbeat tick (5 s).
      expect(detectedAfter).to.be.within(failureTimeoutMs - 50, failureTimeoutMs + 1000);
    } finally {
      await server.close(0);
    }
  });

  it("ends a stream that sends no hello within the failure timeout, giving its call slot back", async () => {
    const failureTimeoutMs = 300;
    const server = await startTestServer({ providers: { failureTimeoutMs }, connection: { maxCallsInFlight: 2 } });
    try {
      const transport = createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` });
      const raw = createClient(ProviderService, transport);
      const quiet = new AbortController();
      // Headers only: the stream never sends a message. Two of them take both call slots.
      const silentStream = async (): Promise<unknown> => {
        const requests = (async function* (): AsyncGenerator<never> {
          await once(quiet.signal, "abort");
          // Nothing is ever sent: the generator only ends once the test is over.
          yield* [];
        })();
        try {
          for await (const response of raw.connect(requests)) void response;
          return undefined;
        } catch (error) {
          return error;
        }
      };
      const failures = await Promise.all([silentStream(), silentStream()]);
      quiet.abort();
      for (const failure of failures) {
        expect(ConnectError.from(failure).code).to.equal(Code.InvalidArgument);
        expect(ConnectError.from(failure).rawMessage).to.equal(
          `the first message of a provider stream must be hello, within the failure timeout of ${failureTimeoutMs} ms: none came`,
        );
      }
      // Both slots are free again.
      const registry = createClientStack("grpc-js", server).registry;
      expect((await registry.getTool({ name: "builtin.echo" })).spec?.name).to.equal("builtin.echo");
    } finally {
      await server.close(0);
    }
  });

  it("spaces reconnection attempts by a capped, jittered exponential backoff", () => {
    const options = { initialDelayMs: 100, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4, 10].map((attempt) => reconnectDelayMs(attempt, options, () => 0.999999))).to.deep.equal([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect([0, 1, 2, 3, 4, 10].map((attempt) => reconnectDelayMs(attempt, options, () => 0))).to.deep.equal([
      50, 100, 200, 400, 500, 500,
    ]);
  });

  describe("a provider whose connection drops", () => {
    let server: RunningServer;
    let client: ClientStack;
    let proxy: TcpProxy;
    let provider: Provider;
    const events = eventsOf();

    before(async () => {
      server = await startTestServer({ providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 1000 } });
      client = createClientStack("grpc-js", server);
      proxy = await TcpProxy.start(server.grpcAddress);
      provider = createProvider({
        address: proxy.address,
        providerName: "flaky",
        tools: [
          defineTool({
            name: "flaky.upper",
            handler: (inputs) => ({ text: JSON.stringify(inputs["text"] ?? "").toUpperCase() }),
          }),
        ],
        reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
        onEvent: events.onEvent,
      });
      await provider.connected;
    });
    after(async () => {
      provider.close();
      await provider.closed;
      await proxy.close();
      client.close();
      await server.close(0);
    });

    it("is offline meanwhile (UNAVAILABLE names the provider), then reconnects, re-announces its tools and keeps its activations", async () => {
      await client.runner.activateTool({ runner: "kept", toolName: "flaky.upper" });
      const first = provider.connectionId;
      const abort = new AbortController();
      const watch = client.registry.watchTools({}, { signal: abort.signal })[Symbol.asyncIterator]();
      const nextChange = async (): Promise<ToolChangeType> => {
        for (;;) {
          const next = await watch.next();
          if (next.done) throw new Error("the watch ended");
          if (next.value.spec?.name === "flaky.upper" && next.value.type !== ToolChangeType.SNAPSHOT) {
            return next.value.type;
          }
        }
      };
      // Through the snapshot first: the watch is open before the connection drops.
      for (;;) {
        const next = await watch.next();
        if (next.done || next.value.type === ToolChangeType.SNAPSHOT_END) break;
      }
      const disconnected = once(events.emitter, "disconnected");
      proxy.pause();
      expect(await nextChange()).to.equal(ToolChangeType.REMOVED);
      const [lost] = (await disconnected) as [Extract<ProviderEvent, { kind: "disconnected" }>];
      expect(lost.retryInMs).to.be.within(10, 20);

      const offline = 'tool "flaky.upper" is served by provider "flaky", which is not connected';
      await expectToolError(
        client.registry.getTool({ name: "flaky.upper" }),
        Code.Unavailable,
        "ProviderUnavailableError",
        offline,
      );
      await expectToolError(
        client.runner.executeTool({ runner: "kept", toolName: "flaky.upper", inputs: { text: "x" } }),
        Code.Unavailable,
        "ProviderUnavailableError",
        offline,
      );
      await expectToolError(
        client.runner.activateTool({ runner: "other", toolName: "flaky.upper" }),
        Code.Unavailable,
        "ProviderUnavailableError",
        offline,
      );

      const reconnected = once(events.emitter, "connected");
      proxy.resume();
      expect(await nextChange()).to.equal(ToolChangeType.ADDED);
      await reconnected;
      abort.abort();
      expect(provider.connectionId).to.be.a("string").and.not.equal(first);
      expect((await client.registry.getTool({ name: "flaky.upper" })).spec?.hasHandler).to.equal(true);
      // Still active in runner "kept": no ActivateTool since the reconnect.
      const executed = await client.runner.executeTool({
        runner: "kept",
        toolName: "flaky.upper",
        inputs: { text: "back" },
      });
      expect(executed.result?.output).to.deep.equal({ text: '"BACK"' });
    });

    it("comes back after the server restarts on the same port", async () => {
      const disconnected = once(events.emitter, "disconnected");
      const reconnected = once(events.emitter, "connected");
      const port = Number(server.grpcAddress.split(":")[1]);
      client.close();
      await server.close(0);
      await disconnected;
      server = await startTestServer({
        grpcPort: port,
        providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 1000 },
      });
      client = createClientStack("grpc-js", server);
      await reconnected;
      const result = await resultOf(client, "flaky.upper");
      expect(result.success, result.error?.details).to.equal(true);
    });
  });
});

describe("Providers over TLS and mutual TLS", () => {
  let pki: TestPki;
  const echo = defineTool({ name: "secure.echo", handler: (inputs) => ({ echoed: inputs }) });
  const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

  before(async () => {
    pki = await createTestPki();
  });

  it("serves a tool to a TLS server, trusting its CA, and sends its token there", async () => {
    const server = await startTestServer({
      tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile },
      identities: [
        { name: "prov", tokenSha256: [sha256("prov-token")], grants: [{ actions: ["admin"], patterns: ["*"] }] },
      ],
    });
    const client = createClientStack("grpc-js", server, { ca: pki.ca });
    const provider = createProvider({
      address: server.grpcAddress,
      providerName: "secure",
      tools: [echo],
      token: "prov-token",
      tls: { ca: pki.ca },
    });
    try {
      await provider.connected;
      const result = await resultOf(client, "secure.echo", "prov-token");
      expect(result.output).to.deep.equal({ echoed: { a: 1 } });
    } finally {
      provider.close();
      await provider.closed;
      client.close();
      await server.close(0);
    }
  });

  it("serves a tool to a mutual-TLS server with its client certificate, and is refused without one", async () => {
    const server = await startTestServer({
      tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile, clientCaFile: pki.caFile },
      identities: [{ name: "prov", certificateNames: ["prov"], grants: [{ actions: ["admin"], patterns: ["*"] }] }],
    });
    const certificate = await pki.client("prov");
    const client = createClientStack("grpc-js", server, { ca: pki.ca, ...certificate });
    const provider = createProvider({
      address: server.grpcAddress,
      providerName: "secure",
      tools: [echo],
      tls: { ca: pki.ca, ...certificate },
    });
    const anonymous = createProvider({
      address: server.grpcAddress,
      providerName: "secure",
      tools: [echo],
      tls: { ca: pki.ca },
      reconnect: false,
    });
    try {
      await provider.connected;
      const result = await resultOf(client, "secure.echo");
      expect(result.output).to.deep.equal({ echoed: { a: 1 } });
      let failure: unknown;
      await anonymous.connected.catch((error: unknown) => (failure = error));
      expect(failure, "the provider without a certificate must be refused").to.be.instanceOf(Error);
    } finally {
      provider.close();
      anonymous.close();
      await Promise.all([provider.closed, anonymous.closed]);
      client.close();
      await server.close(0);
    }
  });

  it("refuses to send a token over plaintext to another machine unless told to", () => {
    expect(() =>
      createProvider({ address: "10.1.2.3:50051", providerName: "p", tools: [echo], token: "secret" }),
    ).to.throw(
      TypeError,
      'refusing to send the token in clear to "10.1.2.3:50051": pass tls (at least the server\'s ca), or allowInsecureToken: true on a network you trust',
    );
    for (const address of ["127.0.0.1:1", "[::1]:1", "localhost:1", "[::ffff:127.0.0.1]:1"]) {
      const allowed = createProvider({ address, providerName: "p", tools: [echo], token: "t", reconnect: false });
      allowed.close();
    }
    const insecure = createProvider({
      address: "10.1.2.3:50051",
      providerName: "p",
      tools: [echo],
      token: "t",
      allowInsecureToken: true,
    });
    insecure.close();
  });
});

describe("A provider that drains", () => {
  let server: RunningServer;
  let client: ClientStack;
  const gates = new EventEmitter();
  const started = new EventEmitter();

  /** "drain.hold" waits until the test opens its gate (by execution id), or forever. */
  const holdTool = (label: string) =>
    defineTool({
      name: "drain.hold",
      handler: (_inputs, context) =>
        new Promise((resolve, reject) => {
          gates.once(context.executionId, () => resolve({ by: label }));
          context.signal.addEventListener("abort", () => reject(new Error(`stopped at ${label}`)), { once: true });
          started.emit("started", { label, executionId: context.executionId });
        }),
    });

  // A server of its own for each test: closing one right after a provider drained must not hang.
  beforeEach(async () => {
    server = await startTestServer({ providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 1000 } });
    client = createClientStack("grpc-js", server);
  });
  afterEach(async () => {
    client.close();
    await server.close(0);
  });

  it("finishes the runs it holds, takes no new ones, and leaves without a ProviderError", async () => {
    const old = createProvider({ address: server.grpcAddress, providerName: "drain", tools: [holdTool("old")] });
    await old.connected;
    const running = once(started, "started");
    const first = resultOf(client, "drain.hold");
    const [{ executionId }] = (await running) as [{ executionId: string }];

    const replacement = createProvider({
      address: server.grpcAddress,
      providerName: "drain",
      tools: [holdTool("new")],
    });
    await replacement.connected;
    const drained = old.drain(60_000);
    // Sent after the drain: the new run goes to the replacement, however loaded the old one is.
    const [secondStarted] = await Promise.all([
      once(started, "started"),
      client.executions.startExecution({ toolName: "drain.hold", inputs: {} }),
    ]);
    const [{ label: secondAt, executionId: secondId }] = secondStarted as [{ label: string; executionId: string }];
    expect(secondAt).to.equal("new");
    gates.emit(executionId);
    expect((await first).output).to.deep.equal({ by: "old" });
    await drained;
    expect(server.runtime.providers.stats().connections).to.equal(1);
    gates.emit(secondId);
    await replacement.drain();
    expect(server.runtime.providers.stats()).to.deep.equal({
      connections: 0,
      tools: 0,
      runsInFlight: 0,
      waitingRuns: 0,
    });
  });

  it("hands back a run it cannot finish within its grace period, which another connection then runs", async () => {
    const old = createProvider({ address: server.grpcAddress, providerName: "drain", tools: [holdTool("old")] });
    await old.connected;
    const running = once(started, "started");
    const run = resultOf(client, "drain.hold");
    await running;
    const replacement = createProvider({
      address: server.grpcAddress,
      providerName: "drain",
      tools: [holdTool("new")],
    });
    await replacement.connected;
    const again = once(started, "started");
    await old.drain(50);
    const [{ label, executionId }] = (await again) as [{ label: string; executionId: string }];
    expect(label).to.equal("new");
    gates.emit(executionId);
    const result = await run;
    expect(result.success, result.error?.details).to.equal(true);
    expect(result.output).to.deep.equal({ by: "new" });
    await replacement.drain();
  });

  it("refuses a hand-back from a connection that is not draining", async () => {
    const raw = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    const abort = new AbortController();
    let assigned = "";
    const requests = (async function* () {
      yield create(ConnectRequestSchema, {
        message: { case: "hello", value: { providerName: "eager", tools: [{ name: "eager.tool" }] } },
      });
      await once(gates, "assigned");
      yield create(ConnectRequestSchema, {
        message: { case: "handBack", value: { executionId: assigned, reason: "no" } },
      });
      await once(abort.signal, "abort");
    })();
    let reason = "";
    for await (const response of raw.connect(requests, { signal: abort.signal })) {
      if (response.message.case === "welcome") {
        await client.executions.startExecution({ toolName: "eager.tool", inputs: {} });
      }
      if (response.message.case === "assign") {
        assigned = response.message.value.executionId;
        gates.emit("assigned");
      }
      if (response.message.case === "rejected") {
        reason = response.message.value.reason;
        break;
      }
    }
    abort.abort();
    expect(reason).to.equal(`execution "${assigned}" cannot be handed back: only a draining provider hands runs back`);
  });
});
