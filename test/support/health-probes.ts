// Health probes as a kubelet sends them: each on a connection of its own, so that a probe waits for
// whatever a new client waits for (accept, first read), not for an open connection's next turn.
import { credentials, loadPackageDefinition, type Client, type ServiceClientConstructor } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { protoPath as healthProtoPath } from "grpc-health-check";
import http from "node:http";

type HealthClient = Client & {
  Check(
    request: { service: string },
    options: { deadline: number },
    callback: (error: Error | null, response?: { status: string }) => void,
  ): void;
};

const healthConstructor = (() => {
  const definition = loadPackageDefinition(loadSync(healthProtoPath, { keepCase: true, enums: String }));
  const grpc = definition["grpc"] as Record<string, Record<string, Record<string, ServiceClientConstructor>>>;
  return grpc["health"]!["v1"]!["Health"]!;
})();

/** GET `url` (an HTTP/1.1 health endpoint) on a new connection; resolves once a 200 is read whole. */
export function probeHttpHealth(url: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      response.once("end", () =>
        response.statusCode === 200 ? resolve() : reject(new Error(`${url} answered ${response.statusCode}`)),
      );
    });
    request.once("timeout", () => request.destroy(new Error(`${url}: no answer within ${timeoutMs} ms`)));
    request.once("error", reject);
  });
}

/** grpc.health.v1 Check of the whole server on a channel with a subchannel of its own; resolves on SERVING. */
export function probeHealthCheck(grpcAddress: string, timeoutMs = 10_000): Promise<void> {
  // grpc-js would otherwise reuse the previous probe's connection from its shared subchannel pool.
  const client = new healthConstructor(grpcAddress, credentials.createInsecure(), {
    "grpc.use_local_subchannel_pool": 1,
  }) as unknown as HealthClient;
  return new Promise<void>((resolve, reject) =>
    client.Check({ service: "" }, { deadline: Date.now() + timeoutMs }, (error, response) =>
      error ? reject(error) : response?.status === "SERVING" ? resolve() : reject(new Error(response?.status)),
    ),
  ).finally(() => client.close());
}
