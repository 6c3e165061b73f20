import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Client as GrpcClient } from "@grpc/grpc-js";
import { expect } from "chai";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startFlood } from "../support/flood-client.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";
import { startTestServer } from "../support/test-server.js";
import { testGate } from "../support/test-tools.js";

type HealthClient = GrpcClient & {
  Check(request: { service: string }, callback: (error: Error | null, response?: { status: string }) => void): void;
};

const refusalMessage = (limit: number): string =>
  `the server has ${limit} calls in flight, its limit: retry with backoff, or raise --max-calls-in-flight`;

describe("Health under a stream flood", function () {
  // 10,000 calls from another process take a few seconds, more on a loaded machine.
  this.timeout(60_000);
  // Ten times the bound, in 100 connections of 100 calls: the default MAX_CONCURRENT_STREAMS, so
  // every call is sent at once (a client queues calls beyond it, and these would wait behind
  // the held ones of their connection). A bound of 1,000 gives the probes, which share this
  // process's event loop with the server, a wide margin: 500 was once all started before a
  // probe's answer was read in a loaded CI run.
  const limit = 1000;
  const connections = 100;
  const callsEach = 100;
  const total = connections * callsEach;
  let server: RunningServer;
  let health: HealthClient;

  before(async () => {
    server = await startTestServer({
      connection: { maxCallsInFlight: limit },
      executions: { maxConcurrent: limit },
    });
    health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", server.grpcAddress) as HealthClient;
  });
  after(async () => {
    health.close();
    await server.close(0);
  });

  const healthz = async (): Promise<void> => {
    const response = await fetch(`${server.httpUrl}/healthz`);
    expect(response.status).to.equal(200);
    expect(await response.text()).to.equal("ok\n");
  };
  const check = async (): Promise<void> => {
    const status = await new Promise<string>((resolve, reject) =>
      health.Check({ service: "" }, (error, response) => (error ? reject(error) : resolve(response?.status ?? ""))),
    );
    expect(status).to.equal("SERVING");
  };

  for (const port of ["HTTP", "gRPC"] as const) {
    it(`on the ${port} port: refuses the calls beyond the bound with RESOURCE_EXHAUSTED, answers /healthz and grpc.health.v1 Check before it has started the admitted calls, runs those to success, then serves normally`, async () => {
      const url = port === "HTTP" ? server.httpUrl : `http://${server.grpcAddress}`;
      testGate.reset();
      // Both probes' connections are open before the flood, as a prober's would be.
      await Promise.all([healthz(), check()]);
      const flood = startFlood(url, connections, callsEach, "test.gate", limit);
      try {
        // The server has begun to take the flood in. Starting the admitted calls takes it many
        // turns of the event loop: the probes sent now must be answered in between, while calls
        // admitted by the limit are still waiting to start.
        await testGate.until(1);
        const [enteredAtHealthz, enteredAtCheck] = await Promise.all([
          healthz().then(() => testGate.entered),
          check().then(() => testGate.entered),
        ]);
        expect(enteredAtHealthz, "admitted calls started when /healthz answered").to.be.below(limit);
        expect(enteredAtCheck, "admitted calls started when Check answered").to.be.below(limit);

        const refused = await flood.report;
        expect(refused.codes).to.deep.equal({ [String(Code.ResourceExhausted)]: total - limit });
        expect(refused.messages).to.deep.equal([refusalMessage(limit)]);
        expect(refused.resets).to.deep.equal({});
        expect(refused.open).to.equal(limit);

        await testGate.until(limit);
        testGate.open();
        const finished = await flood.finished;
        expect(finished.codes).to.deep.equal({
          "0": limit,
          [String(Code.ResourceExhausted)]: total - limit,
        });
        expect(finished.resets).to.deep.equal({});
      } finally {
        await flood.release();
      }

      const grpcJs = port === "gRPC" ? createGrpcJsClient(RunnerService, server.grpcAddress) : undefined;
      const runner =
        grpcJs?.client ??
        createClient(
          RunnerService,
          createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2", useBinaryFormat: true }),
        );
      try {
        let last;
        for await (const response of runner.runTool({ toolName: "builtin.echo", inputs: { after: "flood" } }))
          last = response.event?.event;
        expect(last?.case === "completed" && last.value.result?.output).to.deep.equal({ echo: { after: "flood" } });
      } finally {
        grpcJs?.close();
      }
      await Promise.all([healthz(), check()]);
    });
  }
});
