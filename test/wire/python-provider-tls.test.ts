// The Python provider library (examples/python/toolruntime_provider.py) over TLS and mutual TLS,
// with a bearer token, and draining: a run it cannot finish within its grace period is handed back
// and another connection runs it to completion.
import { expect } from "chai";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { createProvider } from "../../src/providers/create-provider.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { createTestPki, type TestPki } from "../support/certificates.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect } from "../support/expect-error.js";
import { generatePythonStubs, python, repoRoot } from "../support/python-harness.js";
import { startTestServer } from "../support/test-server.js";
import { PythonProviderProcess } from "../support/python-provider-process.js";

const fixtureScript = path.join(repoRoot, "test/python/provider_tls_fixture.py");
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The Provider options test/python/provider_tls_fixture.py passes on, and its drain's grace period. */
interface FixtureOptions {
  readonly token?: string;
  readonly root_certificates?: string;
  readonly certificate_chain?: string;
  readonly private_key?: string;
  readonly reconnect?: boolean;
  readonly grace?: number;
}

/** The Python provider as a child process, and what it printed so far. */
class PythonProvider extends PythonProviderProcess {
  constructor(stubsDir: string, grpcAddress: string, options: FixtureOptions) {
    super(python, [fixtureScript, stubsDir, grpcAddress, JSON.stringify(options)], repoRoot);
  }
}

/** Watches an execution to its end and returns its events. */
async function eventsOf(client: ClientStack, executionId: string, token?: string): Promise<RunEvent[]> {
  const headers = token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } };
  return (await collect(client.executions.watchExecution({ executionId }, headers))).map(
    (response) => response.event as RunEvent,
  );
}

/** The result of a run's COMPLETED event (the last one). */
function completedResult(events: RunEvent[]): ToolResult | undefined {
  const last = events.at(-1);
  expect(last?.event.case, "the last event").to.equal("completed");
  return last?.event.case === "completed" ? last.event.value.result : undefined;
}

describe("The Python provider library over TLS and mutual TLS, and draining", function () {
  this.timeout(30_000);
  let pki: TestPki;
  let stubsDir: string;
  const children: PythonProvider[] = [];
  const servers: RunningServer[] = [];
  const clients: ClientStack[] = [];

  const startPython = (server: RunningServer, options: FixtureOptions): PythonProvider => {
    const started = new PythonProvider(stubsDir, server.grpcAddress, options);
    children.push(started);
    return started;
  };

  before(async () => {
    stubsDir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-tls-"));
    [pki] = await Promise.all([createTestPki(), generatePythonStubs(stubsDir)]);
  });

  afterEach(async () => {
    for (const child of children) child.kill();
    await Promise.all(children.splice(0).map((child) => child.exited));
    for (const client of clients.splice(0)) client.close();
    await Promise.all(servers.splice(0).map((server) => server.close(0)));
  });

  after(async () => {
    if (stubsDir) await rm(stubsDir, { recursive: true, force: true });
    if (pki) await rm(pki.dir, { recursive: true, force: true });
  });

  it("serves a tool to a TLS server, trusting its CA, and sends its bearer token there", async () => {
    const server = await startTestServer({
      tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile },
      identities: [
        { name: "prov", tokenSha256: [sha256("prov-token")], grants: [{ actions: ["admin"], patterns: ["*"] }] },
      ],
    });
    servers.push(server);
    const client = createClientStack("grpc-js", server, { ca: pki.ca });
    clients.push(client);

    // A wrong token is refused (UNAUTHENTICATED ends the provider): the token does reach the server.
    const impostor = startPython(server, { root_certificates: pki.caFile, token: "wrong-token" });
    const [impostorCode] = await impostor.exited;
    expect(impostorCode, impostor.stderr).to.equal(1);
    expect(impostor.stdout).to.match(/^ended: UNAUTHENTICATED: /m);
    expect(impostor.stdout).to.not.contain("connected");

    const provider = startPython(server, { root_certificates: pki.caFile, token: "prov-token" });
    await provider.waitFor("connected");
    const headers = { headers: { authorization: "Bearer prov-token" } };
    const started = await client.executions.startExecution({ toolName: "pytls.echo", inputs: { a: 1 } }, headers);
    const executionId = started.execution?.executionId ?? "";
    const result = completedResult(await eventsOf(client, executionId, "prov-token"));
    expect(result?.success, result?.error?.details).to.equal(true);
    expect(result?.output).to.deep.equal({ echoed: { a: 1 } });
    const record = await client.executions.getExecution({ executionId }, headers);
    expect(record.execution?.caller).to.equal("prov");

    provider.child.kill("SIGTERM");
    const [code] = await provider.exited;
    expect(code, provider.stderr).to.equal(0);
    expect(provider.stdout).to.contain("stopped");
  });

  it("serves a tool to a mutual-TLS server with its client certificate, and is refused without one", async () => {
    const server = await startTestServer({
      tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile, clientCaFile: pki.caFile },
      identities: [{ name: "prov", certificateNames: ["prov"], grants: [{ actions: ["admin"], patterns: ["*"] }] }],
    });
    servers.push(server);
    const certificate = await pki.client("prov");
    const client = createClientStack("grpc-js", server, { ca: pki.ca, ...certificate });
    clients.push(client);

    // The CA as a path, the client's certificate and key as PEM text: the library takes either.
    const provider = startPython(server, {
      root_certificates: pki.caFile,
      certificate_chain: certificate.cert.toString(),
      private_key: certificate.key.toString(),
    });
    await provider.waitFor("connected");
    const started = await client.executions.startExecution({ toolName: "pytls.echo", inputs: { b: 2 } });
    const executionId = started.execution?.executionId ?? "";
    const result = completedResult(await eventsOf(client, executionId));
    expect(result?.success, result?.error?.details).to.equal(true);
    expect(result?.output).to.deep.equal({ echoed: { b: 2 } });
    expect((await client.executions.getExecution({ executionId })).execution?.caller).to.equal("prov");

    const anonymous = startPython(server, { root_certificates: pki.caFile, reconnect: false });
    const [anonymousCode] = await anonymous.exited;
    expect(anonymousCode, anonymous.stderr).to.equal(1);
    expect(anonymous.stdout).to.match(/^ended: UNAVAILABLE: /m);
    expect(anonymous.stdout).to.not.contain("connected");
    expect(server.runtime.providers.stats().connections).to.equal(1);
  });

  it("hands back a run it cannot finish within its drain's grace period, which another connection then runs", async () => {
    const server = await startTestServer({ providers: { heartbeatIntervalMs: 200, failureTimeoutMs: 1000 } });
    servers.push(server);
    const client = createClientStack("grpc-js", server);
    clients.push(client);
    const old = startPython(server, { grace: 0.2 });
    await old.waitFor("connected");
    const started = await client.executions.startExecution({ toolName: "pytls.hold", inputs: { n: 3 } });
    const executionId = started.execution?.executionId ?? "";
    await old.waitFor(`holding ${executionId}`);

    const replacement = createProvider({
      address: server.grpcAddress,
      providerName: "pytls",
      tools: [
        defineTool({
          name: "pytls.hold",
          handler: (inputs, context) => ({ by: "replacement", inputs, id: context.executionId }),
        }),
      ],
    });
    try {
      await replacement.connected;
      old.child.kill("SIGTERM");
      const events = await eventsOf(client, executionId);
      const result = completedResult(events);
      expect(result?.success, result?.error?.details).to.equal(true);
      expect(result?.output).to.deep.equal({ by: "replacement", inputs: { n: 3 }, id: executionId });
      // One attempt, which succeeded: the hand-back failed nothing, and no ProviderError was seen.
      const finished = events.flatMap((event) => (event.event.case === "executionFinished" ? [event.event.value] : []));
      expect(finished.map((value) => [value.success, value.attempt, value.error?.errorType])).to.deep.equal([
        [true, 1, undefined],
      ]);
      expect(events.map((event) => event.event.case)).to.not.include("retryScheduled");

      const [code] = await old.exited;
      expect(code, old.stderr).to.equal(0);
      expect(old.stdout).to.contain(`released ${executionId}`);
      expect(old.stdout).to.contain("stopped");
      // The Python connection is gone; the replacement alone is left, holding nothing.
      expect(server.runtime.providers.stats()).to.deep.equal({
        connections: 1,
        tools: 1,
        runsInFlight: 0,
        waitingRuns: 0,
      });
    } finally {
      replacement.close();
      await replacement.closed;
    }
  });
});
