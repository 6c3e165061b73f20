import http from "node:http";
import type { AddressInfo } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import { HealthSignals } from "./health-signals.js";
import { limitConnectionsPerPeer } from "./peer-connection-limit.js";

// The body of the health port's thread (see listenHealth): a plain HTTP/1.1 server on its own
// event loop that answers /healthz and /readyz from the shared HealthSignals. Floods of calls,
// streams or connections on the service ports keep the main thread's event loop busy; they do
// not reach this thread, so probes are answered at once while the process is alive.

/** What the main thread gives the thread. */
export interface HealthThreadData {
  readonly host: string;
  readonly port: number;
  readonly signals: SharedArrayBuffer;
  /** Longest the main thread's event loop may go without a beat before /healthz fails, in ms. */
  readonly unresponsiveAfterMs: number;
  /** Most open connections; connections beyond it are closed as they arrive. */
  readonly maxConnections: number;
  /** Most open connections from one remote address (0: no limit of its own). */
  readonly maxConnectionsPerPeer: number;
}

/** What the thread tells the main thread. */
export type HealthThreadMessage =
  | { readonly kind: "listening"; readonly port: number }
  | { readonly kind: "failed"; readonly message: string; readonly code: string | undefined }
  | { readonly kind: "closed" };

const port = parentPort;
if (!port) throw new Error("health-listener-thread.js runs as a worker thread (see listenHealth)");
const data = workerData as HealthThreadData;
const signals = new HealthSignals(data.signals);
const post = (message: HealthThreadMessage): void => port.postMessage(message);

/** Longest a probe may take to send its request headers, in milliseconds. */
const headersTimeoutMs = 10_000;

const server = http.createServer(
  { headersTimeout: headersTimeoutMs, requestTimeout: headersTimeoutMs },
  (request, response) => {
    const reply = (status: number, body: string): void => {
      response.writeHead(status, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
      response.end(body);
    };
    const path = (request.url ?? "").split("?")[0] ?? "";
    if (request.method !== "GET" || (path !== "/healthz" && path !== "/readyz")) {
      reply(404, "not found: this port serves only /healthz and /readyz\n");
      return;
    }
    // The main thread's loop may be busy for a while under load; past the bound it is taken for stuck.
    const silentMs = Date.now() - signals.mainBeatAt;
    if (silentMs > data.unresponsiveAfterMs) {
      reply(503, `unresponsive: the server's event loop has not turned for ${silentMs} ms\n`);
      return;
    }
    if (path === "/healthz") reply(200, "ok\n");
    else if (signals.serving) reply(200, "ready\n");
    else reply(503, "not serving: starting, shutting down, or its store is unavailable\n");
  },
);
server.maxConnections = data.maxConnections;
limitConnectionsPerPeer(server, data.maxConnectionsPerPeer);

server.once("error", (error: NodeJS.ErrnoException) => {
  post({ kind: "failed", message: error.message, code: error.code });
  process.exit(1);
});
server.listen(data.port, data.host, () => {
  post({ kind: "listening", port: (server.address() as AddressInfo).port });
});

port.on("message", (message: { readonly kind: "close" }) => {
  if (message.kind !== "close") return;
  server.close(() => {
    post({ kind: "closed" });
    port.close();
  });
  server.closeAllConnections();
});
