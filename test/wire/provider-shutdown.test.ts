// On shutdown the server tells its providers at once (`draining`): an idle provider leaves and the
// process exits in well under a second instead of waiting its whole grace period; a provider with
// a run in flight finishes it first; both connect again afterwards (elsewhere, behind a load
// balancer).
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { EventEmitter, once } from "node:events";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { createProvider, type Provider, type ProviderEvent } from "../../src/providers/create-provider.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { collect } from "../support/expect-error.js";
import { startMainProcess } from "../support/main-process.js";

/** A grace period far longer than the exits these tests expect. */
const graceMs = 10_000;

/** Emits "holding" when the held run started in the provider; "release" lets it return. */
const handlerEvents = new EventEmitter();

const heldTool = defineTool({
  name: "moving.hold",
  handler: async () => {
    const released = once(handlerEvents, "release");
    handlerEvents.emit("holding");
    await released;
    return { finished: true };
  },
});

/** A provider of `moving.hold` that reports its events on an emitter, by kind. */
function startProvider(grpcAddress: string): { provider: Provider; events: EventEmitter } {
  const events = new EventEmitter();
  const provider = createProvider({
    address: grpcAddress,
    providerName: "moving",
    tools: [heldTool],
    reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
    onEvent: (event: ProviderEvent) => events.emit(event.kind, event),
  });
  return { provider, events };
}

describe("Providers when the server shuts down", function () {
  this.timeout(graceMs + 10_000);

  it("tells an idle provider to move, so that the server exits in well under a second", async () => {
    const server = await startMainProcess(["--shutdown-grace-ms", String(graceMs)]);
    const { provider, events } = startProvider(server.grpcAddress);
    try {
      await provider.connected;
      const draining = once(events, "draining") as Promise<[Extract<ProviderEvent, { kind: "draining" }>]>;
      const disconnected = once(events, "disconnected") as Promise<[Extract<ProviderEvent, { kind: "disconnected" }>]>;
      const signalledAt = performance.now();
      server.child.kill("SIGTERM");
      const [told] = await draining;
      expect(told.reason).to.equal("the server is shutting down");
      // The provider ended its stream without an error, and will connect again.
      const [left] = await disconnected;
      expect(left.error).to.equal(undefined);
      expect(left.retryInMs).to.be.a("number");
      expect(await server.exited).to.equal(0);
      expect(performance.now() - signalledAt).to.be.below(1000);
    } finally {
      provider.close();
      await provider.closed;
      server.child.kill("SIGKILL");
    }
  });

  it("lets a provider finish its run in flight, then exits as soon as it has", async () => {
    const server = await startMainProcess(["--shutdown-grace-ms", String(graceMs)]);
    const { provider, events } = startProvider(server.grpcAddress);
    const runner = createClient(RunnerService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    try {
      await provider.connected;
      const holding = once(handlerEvents, "holding");
      const run = collect(runner.runTool({ toolName: "moving.hold" }));
      await holding;
      const draining = once(events, "draining");
      server.child.kill("SIGTERM");
      await draining;
      let exited = false;
      void server.exited.then(() => (exited = true));
      // The server waits for the run: it has not exited while the run is held.
      expect(exited).to.equal(false);
      const releasedAt = performance.now();
      handlerEvents.emit("release");
      const runEvents = (await run).map((response) => response.event as RunEvent);
      const last = runEvents.at(-1)?.event;
      expect(last?.case).to.equal("completed");
      if (last?.case === "completed") {
        expect(last.value.result?.success, last.value.result?.error?.details).to.equal(true);
        expect(last.value.result?.output).to.deep.equal({ finished: true });
      }
      expect(await server.exited).to.equal(0);
      expect(performance.now() - releasedAt).to.be.below(1000);
    } finally {
      provider.close();
      await provider.closed;
      server.child.kill("SIGKILL");
    }
  });
});
