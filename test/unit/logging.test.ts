import { create } from "@bufbuild/protobuf";
import { createContextValues, createHandlerContext } from "@connectrpc/connect";
import { expect } from "chai";
import { Writable } from "node:stream";
import { pino } from "pino";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { ToolResultSchema, ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { createCallLogger, createRunLogger } from "../../src/telemetry/logging.js";

/** A pino logger at `level` whose lines are kept. */
function capture(level: string): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as never);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

const method = RunnerService.method.executeTool;
const context = () =>
  createHandlerContext({
    service: RunnerService,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: "/x",
    contextValues: createContextValues(),
  });
const info = {
  executionId: "e-1",
  spec: create(ToolSpecSchema, { name: "a.tool" }),
  runnerName: "default",
  caller: "alice",
  inputs: { secret: 1 },
  traceParent: undefined,
};

describe("Call and run logs", () => {
  it("log a call that ended OK at debug only, and one that did not at info", () => {
    const atInfo = capture("info");
    createCallLogger(atInfo.logger)(method, context())(0);
    createCallLogger(atInfo.logger)(method, context())(5);
    expect(atInfo.lines.map((line) => [line["msg"], line["code"], line["level"]])).to.deep.equal([
      ["call", "NOT_FOUND", 30],
    ]);
    const atDebug = capture("debug");
    createCallLogger(atDebug.logger)(method, context())(0);
    expect(atDebug.lines.map((line) => [line["msg"], line["code"], line["level"]])).to.deep.equal([["call", "OK", 20]]);
  });

  it("log a run that succeeded at debug only, one that failed at info, and audit only into an audit log", () => {
    const main = capture("info");
    const observer = createRunLogger(main.logger);
    observer.onRunEnd?.(info, create(ToolResultSchema, { success: true }));
    observer.onRunEnd?.(info, create(ToolResultSchema, { success: false, error: { errorType: "HandlerError" } }));
    expect(main.lines.map((line) => [line["msg"], line["outcome"]])).to.deep.equal([["run", "HandlerError"]]);
    expect(main.lines.some((line) => "inputsSha256" in line)).to.equal(false);

    const audit = capture("info");
    createRunLogger(capture("info").logger, { audit: audit.logger }).onRunEnd?.(
      info,
      create(ToolResultSchema, { success: true }),
    );
    expect(audit.lines).to.have.length(1);
    expect(audit.lines[0]).to.include({ audit: "execution", caller: "alice", tool: "a.tool", outcome: "success" });
    expect(audit.lines[0]?.["inputsSha256"]).to.match(/^[0-9a-f]{64}$/);
  });
});
