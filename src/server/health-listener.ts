import http from "node:http";
import type { AddressInfo } from "node:net";
import type { HealthReporter } from "./health.js";
import { withOperationalEndpoints } from "./http-endpoints.js";
import type { NodeRequestHandler } from "./http-listener.js";

/** A listening plain-HTTP health port. */
export interface HealthListener {
  /** The port actually bound (useful when 0 was asked for). */
  readonly port: number;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Longest a probe may take to send its request headers, in milliseconds. */
const headersTimeoutMs = 10_000;

/**
 * Listens in cleartext HTTP/1.1 on `host:port` and answers only `GET /healthz` and `GET /readyz`
 * (404 to anything else), so that probes without a client certificate reach health under mutual
 * TLS. It serves no RPC, metrics or data. Rejects when the port cannot be bound.
 */
export async function listenHealth(host: string, port: number, health: HealthReporter): Promise<HealthListener> {
  const notFound: NodeRequestHandler = (_request, response) => {
    response.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
    response.end("not found: this port serves only /healthz and /readyz\n");
  };
  const handler = withOperationalEndpoints(notFound, health, undefined);
  const server = http.createServer({ headersTimeout: headersTimeoutMs, requestTimeout: headersTimeoutMs }, handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
