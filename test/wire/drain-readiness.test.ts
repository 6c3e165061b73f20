import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { startTestServer } from "../support/test-server.js";

/** GET `path` on a fresh connection (no keep-alive reuse), resolving to status and body. */
async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { headers: { connection: "close" } });
  return { status: response.status, body: await response.text() };
}

describe("Readiness during the shutdown drain", () => {
  it("answers /readyz with 503 and /healthz with 200 while a run drains, refuses new calls, then stops", async () => {
    const server = await startTestServer();
    const runner = createClient(RunnerService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
    const release = new AbortController();
    let markStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    const run = (async () => {
      for await (const response of runner.runTool(
        { toolName: "test.wait_for_cancel", inputs: {} },
        { signal: release.signal },
      )) {
        if (response.event?.event.case === "progress") markStarted();
      }
    })().catch((error: unknown) => ConnectError.from(error));
    await started;
    expect(await get(`${server.httpUrl}/readyz`)).to.deep.equal({ status: 200, body: "ready\n" });

    let closed = false;
    const closing = server.close(60_000).then(() => (closed = true));
    expect(await get(`${server.httpUrl}/readyz`)).to.deep.equal({ status: 503, body: "shutting down\n" });
    expect(await get(`${server.httpUrl}/healthz`)).to.deep.equal({ status: 200, body: "ok\n" });
    const registry = createClient(
      RegistryService,
      createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
    );
    const refusal = await registry.getTool({ name: "builtin.echo" }).then(
      () => undefined,
      (error: unknown) => ConnectError.from(error),
    );
    expect(refusal?.code).to.equal(Code.Unavailable);
    expect(closed).to.equal(false);

    // The drain ends with the last call in flight.
    release.abort();
    expect((await run)?.code).to.equal(Code.Canceled);
    await closing;
    const refused = await fetch(`${server.httpUrl}/readyz`).then(
      () => "answered",
      () => "refused",
    );
    expect(refused).to.equal("refused");
  });
});
