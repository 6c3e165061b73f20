import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { performance } from "node:perf_hooks";
import { startFlood } from "../support/flood-client.js";
import { startMainProcess, type MainProcess } from "../support/main-process.js";
import { probeHealthCheck, probeHttpHealth } from "../support/health-probes.js";

/** Runs `probe` and resolves with the time it took, in milliseconds. */
async function timed(probe: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await probe();
  return performance.now() - started;
}

describe("Taking a burst of streams in", function () {
  // Each flood: 10,000 calls from another process, 4,096 of them held 3 s.
  this.timeout(90_000);
  const connections = 100;
  const callsEach = 100;
  const held = 4096; // the default --max-calls-in-flight
  let server: MainProcess;

  before(async () => {
    server = await startMainProcess([]);
  });
  after(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  for (const port of ["HTTP", "gRPC"] as const) {
    it(`on the ${port} port: probes on new connections to either port are answered within a second while 100 connections open 100 calls each, and no call is lost`, async () => {
      const url = port === "HTTP" ? server.httpUrl : `http://${server.grpcAddress}`;
      const flood = startFlood(url, connections, callsEach, "builtin.sleep", held, { inputs: { ms: 3000 } });
      let takenIn = false;
      const report = flood.report.finally(() => (takenIn = true));
      const healthz: number[] = [];
      const checks: number[] = [];
      try {
        await flood.started;
        // Back to back, one of each at a time, until every call beyond the held ones was refused.
        await Promise.all([
          (async () => {
            while (!takenIn) healthz.push(await timed(() => probeHttpHealth(`${server.httpUrl}/healthz`)));
          })(),
          (async () => {
            while (!takenIn) checks.push(await timed(() => probeHealthCheck(server.grpcAddress)));
          })(),
        ]);
        const refused = await report;
        expect(refused.codes).to.deep.equal({ [String(Code.ResourceExhausted)]: connections * callsEach - held });
        expect(refused.resets).to.deep.equal({});
        expect(refused.open).to.equal(held);
        const finished = await flood.finished;
        expect(finished.codes).to.deep.equal({
          "0": held,
          [String(Code.ResourceExhausted)]: connections * callsEach - held,
        });
      } finally {
        await flood.release();
      }
      expect(healthz.length + checks.length, "probes answered while the burst was taken in").to.be.at.least(4);
      expect(Math.max(...healthz), `/healthz (ms): ${healthz.map(Math.round).join(", ")}`).to.be.below(1000);
      expect(Math.max(...checks), `Check (ms): ${checks.map(Math.round).join(", ")}`).to.be.below(1000);
    });
  }
});
