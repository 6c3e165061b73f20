import { status, type Client, type ClientReadableStream, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { Code } from "@connectrpc/connect";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { expectToolError } from "../support/expect-error.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { startMainProcess, type MainProcess } from "../support/main-process.js";
import { startPostgres, type PostgresServer } from "../support/postgres-server.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";
import { stopProcess } from "../support/replica-processes.js";

type HealthClient = Client & {
  Watch(request: { service: string }): ClientReadableStream<{ status: string }>;
};

/** Resolves with each status a health Watch stream reports, in order, one promise per status. */
function statuses(stream: ClientReadableStream<{ status: string }>) {
  const seen: string[] = [];
  const waiters: { status: string; resolve: () => void }[] = [];
  stream.on("data", (message: { status: string }) => {
    seen.push(message.status);
    for (const waiter of waiters.splice(0)) {
      if (waiter.status === message.status) waiter.resolve();
      else waiters.push(waiter);
    }
  });
  stream.on("error", (error: ServiceError) => {
    if (error.code !== status.CANCELLED) throw error; // the test ends the stream
  });
  return {
    seen,
    /** Resolves once `status` is reported (at once when it is the latest). */
    reach(status: string): Promise<void> {
      if (seen.at(-1) === status) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ status, resolve }));
    },
  };
}

describe("A replica whose PostgreSQL store goes away and comes back", function () {
  this.timeout(60_000);
  let postgres: PostgresServer;
  let server: MainProcess;

  before(async () => {
    postgres = await startPostgres();
    server = await startMainProcess(["--store", await postgres.createDatabase("availability")]);
  });

  after(async () => {
    if (server) await stopProcess(server);
    await postgres?.stop();
  });

  it("turns NOT_SERVING, answers UNAVAILABLE naming the store, then recovers by itself with nothing lost", async () => {
    const registry = createGrpcJsClient(RegistryService, server.grpcAddress);
    const health = createProtoLoaderClient(
      healthProtoPath,
      "grpc.health.v1.Health",
      server.grpcAddress,
    ) as HealthClient;
    const watch = health.Watch({ service: "" });
    const reported = statuses(watch);
    try {
      await registry.client.registerTool({ spec: { name: "kept.before_outage", description: "acknowledged" } });
      await reported.reach("SERVING");

      await postgres.pause();
      await reported.reach("NOT_SERVING");
      const readyz = await fetch(`${server.httpUrl}/readyz`);
      expect(readyz.status).to.equal(503);
      const error = await expectToolError(
        registry.client.getTool({ name: "kept.before_outage" }),
        Code.Unavailable,
        "UnavailableError",
        `the store at postgres://postgres@127.0.0.1:${postgres.port}/`,
      );
      expect(error.details).to.contain("is unavailable");

      await postgres.resume();
      await reported.reach("SERVING");
      expect((await fetch(`${server.httpUrl}/readyz`)).status).to.equal(200);
      const kept = await registry.client.getTool({ name: "kept.before_outage" });
      expect(kept.spec?.description).to.equal("acknowledged");
      await registry.client.registerTool({ spec: { name: "kept.after_outage" } });
      expect(reported.seen).to.deep.equal(["SERVING", "NOT_SERVING", "SERVING"]);
    } finally {
      watch.cancel();
      health.close();
      registry.close();
    }
  });
});
