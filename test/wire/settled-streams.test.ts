import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { Writable } from "node:stream";
import { pino } from "pino";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { startTestServer } from "../support/test-server.js";
import { plainLifecycle } from "../support/lifecycle.js";

interface LogLine {
  readonly msg: string;
  readonly rpc?: string;
  readonly code?: string;
  readonly level: number;
}

/**
 * RunTool of a run that ends inside start is a settled stream on the gRPC port (see
 * message-batches.ts): written and ended by the adapter without the generators. Its client, its
 * log line and its metrics must be those of any other stream.
 */
describe("RunTool streams known whole at their start, on the gRPC port", () => {
  it("sends every event, then OK; a refused one ends with its code; each is counted, the failure logged", async () => {
    const lines: LogLine[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString().split("\n")) if (text !== "") lines.push(JSON.parse(text) as LogLine);
        done();
      },
    });
    const server = await startTestServer({ logger: pino({ level: "info" }, destination) });
    try {
      const runner = createClient(RunnerService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
      const cases: string[] = [];
      for await (const response of runner.runTool({ toolName: "builtin.noop", inputs: {} })) {
        cases.push(response.event?.event.case ?? "none");
        const event = response.event?.event;
        if (event?.case === "completed") expect(event.value.result?.success).to.equal(true);
      }
      expect(cases).to.deep.equal([...plainLifecycle]);

      // A handler that throws: its run ends inside start too, with a failed result, and the call is OK.
      const failed: boolean[] = [];
      for await (const response of runner.runTool({ toolName: "test.throw_error", inputs: {} })) {
        const event = response.event?.event;
        if (event?.case === "completed") failed.push(event.value.result?.success === false);
      }
      expect(failed).to.deep.equal([true]);

      let refusal: unknown;
      try {
        for await (const response of runner.runTool({ toolName: "nothing.here", inputs: {} })) void response;
      } catch (error) {
        refusal = error;
      }
      expect(refusal).to.be.instanceOf(ConnectError);
      expect((refusal as ConnectError).code).to.equal(Code.NotFound);

      const calls = lines.filter((line) => line.rpc === "toolruntime.v1.RunnerService/RunTool");
      // At the default level a call that succeeded writes no line; a failed one does.
      expect(calls.map((line) => line.code)).to.deep.equal(["NOT_FOUND"]);
      expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).to.deep.equal([]);
      const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
      const counted = metrics
        .split("\n")
        .filter((line) => line.startsWith("toolruntime_rpc_requests_total") && line.includes('method="RunTool"'));
      const count = (code: string): number =>
        Number(
          counted.find((line) => line.includes(`code="${code}"`) && line.includes('protocol="grpc"'))?.split(" ")[1],
        );
      expect(count("OK"), counted.join("\n")).to.equal(2);
      expect(count("NOT_FOUND"), counted.join("\n")).to.equal(1);
    } finally {
      await server.close(0);
    }
  });
});
