import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import http2 from "node:http2";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { addHealthToGrpcServer } from "../../src/server/health.js";
import { listenHealth, type HealthListener } from "../../src/server/health-listener.js";
import { Server } from "@grpc/grpc-js";
import { startMainProcess, type MainProcess } from "../support/main-process.js";

/** GET `url` on a fresh connection; its status, body and how long it took. */
async function probe(url: string): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  const response = await fetch(url, { headers: { connection: "close" } });
  const body = await response.text();
  return { status: response.status, body, ms: performance.now() - started };
}

describe("The health port's own thread", function () {
  this.timeout(60_000);

  describe("in a server whose event loop a handler blocks", () => {
    let server: MainProcess;
    let healthUrl: string;

    before(async () => {
      server = await startMainProcess(["--tools", "dist/test/support/replica-tools.js", "--health-port", "0"]);
      const url = /health: +(http:\/\/\S+)/.exec(server.output())?.[1];
      if (!url) throw new Error(`no health port in: ${server.output()}`);
      healthUrl = url;
    });
    after(async () => {
      server.child.kill("SIGTERM");
      await server.exited;
    });

    it("answers /healthz and /readyz within a second while the service ports wait seconds for the same loop", async () => {
      const activated = await fetch(`${server.httpUrl}/toolruntime.v1.RunnerService/ActivateTool`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ toolName: "replica.stall" }),
      });
      expect(activated.status, await activated.text()).to.equal(200);
      const stallMs = 3000;
      const stall = fetch(`${server.httpUrl}/toolruntime.v1.RunnerService/ExecuteTool`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ toolName: "replica.stall", inputs: { ms: stallMs } }),
      }).then(async (response) => ({ status: response.status, body: await response.text() }));
      let stallEnded = false;
      void stall.finally(() => (stallEnded = true));

      // Probes of the service port show when the loop was blocked; the health port's probes sent
      // meanwhile must not wait for it.
      const servicePortProbes: number[] = [];
      const healthPortProbes: { ms: number; status: number; body: string; duringStall: boolean }[] = [];
      const followServicePort = (async () => {
        while (!stallEnded) servicePortProbes.push((await probe(`${server.httpUrl}/healthz`)).ms);
      })();
      while (!stallEnded) {
        for (const path of ["/healthz", "/readyz"]) {
          const answer = await probe(`${healthUrl}${path}`);
          healthPortProbes.push({ ...answer, duringStall: !stallEnded });
        }
      }
      await followServicePort;

      const outcome = await stall;
      expect(outcome.status, outcome.body).to.equal(200);
      expect(Math.max(...servicePortProbes), "the service port's slowest /healthz").to.be.at.least(stallMs / 2);
      const during = healthPortProbes.filter((answer) => answer.duringStall);
      expect(during.length, "health port probes answered during the stall").to.be.at.least(10);
      for (const answer of during) expect(`${answer.status} ${answer.body}`).to.be.oneOf(["200 ok\n", "200 ready\n"]);
      expect(Math.max(...during.map((answer) => answer.ms)), "the health port's slowest probe (ms)").to.be.below(1000);
    });
  });

  describe("following the main thread", () => {
    let health: ReturnType<typeof addHealthToGrpcServer>;
    let listener: HealthListener;
    let url: string;

    before(async () => {
      health = addHealthToGrpcServer(new Server(), []);
      listener = await listenHealth(
        { host: "127.0.0.1", port: 0, maxConnections: 64, maxConnectionsPerPeer: 0, unresponsiveAfterMs: 300 },
        health,
      );
      url = `http://127.0.0.1:${listener.port}`;
    });
    after(async () => {
      await listener.close();
    });

    it("reports readiness as the server sets it: 503 before serving and after, 200 while serving", async () => {
      expect(await probe(`${url}/readyz`)).to.include({ status: 503 });
      health.serving();
      expect(await probe(`${url}/readyz`)).to.include({ status: 200, body: "ready\n" });
      expect(await probe(`${url}/healthz`)).to.include({ status: 200, body: "ok\n" });
      health.notServing();
      const notReady = await probe(`${url}/readyz`);
      expect([notReady.status, notReady.body]).to.deep.equal([
        503,
        "not serving: starting, shutting down, or its store is unavailable\n",
      ]);
      expect(await probe(`${url}/healthz`)).to.include({ status: 200, body: "ok\n" });
      const other = await probe(`${url}/metrics`);
      expect(other.status).to.equal(404);
    });

    it("fails both endpoints while the main event loop has not turned for longer than the bound", () => {
      health.serving();
      // This thread is blocked inside execFileSync for the whole of the child's life: the child
      // probes after 600 ms, twice the bound, and the health thread must answer it anyway.
      const script = `setTimeout(async () => {
        for (const path of ["/healthz", "/readyz"]) {
          const response = await fetch(${JSON.stringify(url)} + path);
          console.log(response.status + " " + (await response.text()).trim());
        }
      }, 600);`;
      const lines = execFileSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 })
        .trim()
        .split("\n");
      expect(lines).to.have.length(2);
      for (const line of lines)
        expect(line).to.match(/^503 unresponsive: the server's event loop has not turned for \d+ ms$/);
    });

    it("answers again once the loop turns", async () => {
      expect(await probe(`${url}/healthz`)).to.include({ status: 200, body: "ok\n" });
    });
  });
});

describe("Connections per remote address", function () {
  this.timeout(30_000);
  let server: MainProcess;
  let healthUrl: string;
  const perPeer = 8;

  before(async () => {
    server = await startMainProcess([
      "--health-port",
      "0",
      "--max-connections",
      "12",
      "--max-connections-per-peer",
      String(perPeer),
    ]);
    healthUrl = /health: +(http:\/\/\S+)/.exec(server.output())?.[1] ?? "";
  });
  after(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  for (const port of ["gRPC", "HTTP", "health"] as const) {
    it(`on the ${port} port: one address holds at most its share, and another address is still served`, async () => {
      const address = port === "gRPC" ? server.grpcAddress : new URL(port === "HTTP" ? server.httpUrl : healthUrl).host;
      // A connection refused as it arrives may fail its connect with a reset: not served either.
      const served = (localAddress: string): Promise<boolean> =>
        (port === "health" ? servedHttp1(address, localAddress) : servedHttp2(address, localAddress)).catch(
          (error: NodeJS.ErrnoException) => {
            if (error.code === "ECONNRESET") return false;
            throw error;
          },
        );
      const held: net.Socket[] = [];
      try {
        for (let index = 0; index < perPeer; index++) held.push(await connect(address, "127.0.0.1"));
        // The next connection from the same address is closed as it arrives, while the held ones
        // stay open and another address is served.
        expect(await served("127.0.0.1"), "a connection past the address's share").to.equal(false);
        expect(held.every((socket) => socket.readyState === "open")).to.equal(true);
        expect(await served("127.0.0.2"), "a connection from another address").to.equal(true);
      } finally {
        for (const socket of held) socket.destroy();
      }
      // Once its connections closed, the first address gets in again.
      while (!(await served("127.0.0.1")));
    });
  }

  /** Opens a TCP connection from `localAddress` to "host:port"; resolves once it is connected. */
  async function connect(address: string, localAddress: string): Promise<net.Socket> {
    const url = new URL(`http://${address}`);
    const socket = net.connect({ host: url.hostname, port: Number(url.port), localAddress });
    socket.on("error", () => undefined);
    await once(socket, "connect");
    return socket;
  }

  /** Whether an HTTP/2 connection from `localAddress` gets the server's settings (a refused one is closed first). */
  async function servedHttp2(address: string, localAddress: string): Promise<boolean> {
    const socket = await connect(address, localAddress);
    const session = http2.connect(`http://${address}`, { createConnection: () => socket });
    session.on("error", () => undefined);
    const settled = await Promise.race([
      once(session, "remoteSettings").then(() => true),
      once(session, "close").then(() => false),
    ]);
    session.destroy();
    return settled;
  }

  /** Whether an HTTP/1.1 GET /healthz from `localAddress` is answered 200. */
  async function servedHttp1(address: string, localAddress: string): Promise<boolean> {
    const socket = await connect(address, localAddress);
    socket.write(`GET /healthz HTTP/1.1\r\nHost: ${address}\r\nConnection: close\r\n\r\n`);
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (text += chunk));
    await once(socket, "close");
    return text.startsWith("HTTP/1.1 200 OK");
  }
});
