import type { Registry } from "prom-client";
import type { HealthReporter } from "./health.js";
import type { NodeRequestHandler } from "./http-listener.js";
import type { MetricsGate } from "./metrics-access.js";

/**
 * Adds the plain-HTTP operational endpoints in front of the RPC handler: `GET /healthz` (liveness:
 * 200 while the process serves requests at all), `GET /readyz` (readiness: 200 while serving, 503
 * once shutdown has begun) and `GET /metrics` (Prometheus text format), which `metricsGate` may
 * refuse with 401 or 403.
 */
export function withOperationalEndpoints(
  handler: NodeRequestHandler,
  health: Pick<HealthReporter, "isServing">,
  metrics: Registry | undefined,
  metricsGate?: MetricsGate,
): NodeRequestHandler {
  return (request, response) => {
    if (request.method !== "GET") {
      handler(request, response);
      return;
    }
    const path = (request.url ?? "").split("?")[0] ?? "";
    const reply = (status: number, contentType: string, body: string, headers: Record<string, string> = {}): void => {
      response.writeHead(status, { "content-type": contentType, "cache-control": "no-store", ...headers });
      response.end(body);
    };
    switch (path) {
      case "/healthz":
        reply(200, "text/plain; charset=utf-8", "ok\n");
        return;
      case "/readyz":
        if (health.isServing) reply(200, "text/plain; charset=utf-8", "ready\n");
        else reply(503, "text/plain; charset=utf-8", "shutting down\n");
        return;
      case "/metrics": {
        if (!metrics) break;
        const refused = metricsGate?.(request);
        if (refused) {
          const challenge: Record<string, string> =
            refused.status === 401 ? { "www-authenticate": 'Bearer realm="toolruntime metrics"' } : {};
          reply(refused.status, "text/plain; charset=utf-8", `${refused.message}\n`, challenge);
          return;
        }
        metrics.metrics().then(
          (text) => reply(200, metrics.contentType, text),
          (error: unknown) => reply(500, "text/plain; charset=utf-8", `metrics failed: ${String(error)}\n`),
        );
        return;
      }
    }
    handler(request, response);
  };
}
