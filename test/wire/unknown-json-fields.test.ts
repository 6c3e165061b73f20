import { expect } from "chai";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";
import { frameWithFlag, postRawHttp2 as post } from "../support/raw-http2.js";

const executeTool = "/toolruntime.v1.RunnerService/ExecuteTool";
const runTool = "/toolruntime.v1.RunnerService/RunTool";
const getTool = "/toolruntime.v1.RegistryService/GetTool";

/** A gRPC-style frame (flags 0) around `text`. */
function frame(text: string): Buffer {
  const body = Buffer.from(text);
  const header = Buffer.alloc(5);
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

const unknownKey = (typeName: string, key: string) =>
  `cannot decode message ${typeName} from JSON: key "${key}" is unknown`;

describe("Unknown fields in JSON requests", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer();
    const activated = await post(
      server.httpUrl,
      "/toolruntime.v1.RunnerService/ActivateTool",
      "application/json",
      '{"toolName":"builtin.echo"}',
    );
    expect(activated.status).to.equal(200);
  });
  after(async () => {
    await server.close(0);
  });

  it('answers Connect JSON ExecuteTool with "input" for "inputs" INVALID_ARGUMENT naming the field, without running the tool', async () => {
    const answer = await post(
      server.httpUrl,
      executeTool,
      "application/json",
      JSON.stringify({ toolName: "builtin.echo", input: { said: "hi" } }),
    );
    expect(answer.status).to.equal(400);
    expect(JSON.parse(answer.body.toString())).to.include({
      code: "invalid_argument",
      message: unknownKey("toolruntime.v1.ExecuteToolRequest", "input"),
    });
  });

  it("names an unknown field of a nested message", async () => {
    const answer = await post(
      server.httpUrl,
      executeTool,
      "application/json",
      JSON.stringify({ toolName: "builtin.echo", inputs: {}, options: { idempotencyKeyy: "k" } }),
    );
    expect(answer.status).to.equal(400);
    expect((JSON.parse(answer.body.toString()) as { message: string }).message).to.equal(
      unknownKey("toolruntime.v1.ExecutionOptions", "idempotencyKeyy"),
    );
  });

  it("keeps the keys of inputs, which are the tool's to judge, and the field names in either spelling", async () => {
    const answer = await post(
      server.httpUrl,
      executeTool,
      "application/json",
      JSON.stringify({ tool_name: "builtin.echo", inputs: { anything: 1 } }),
    );
    expect(answer.status, answer.body.toString()).to.equal(200);
    expect(JSON.parse(answer.body.toString())).to.nested.include({
      "result.success": true,
      "result.output.echo.anything": 1,
    });
  });

  it("answers gRPC-Web JSON and Connect streaming JSON INVALID_ARGUMENT naming the field", async () => {
    const grpcWeb = await post(server.httpUrl, getTool, "application/grpc-web+json", frame('{"nmae":"builtin.echo"}'));
    const trailers = frameWithFlag(grpcWeb.body, 0x80).toString();
    const grpcStatus = String(grpcWeb.headers["grpc-status"] ?? /grpc-status:\s*(\d+)/.exec(trailers)?.[1]);
    const grpcMessage = decodeURIComponent(
      String(grpcWeb.headers["grpc-message"] ?? /grpc-message:\s*(.*)/.exec(trailers)?.[1] ?? ""),
    ).trim();
    expect({ grpcStatus, grpcMessage }).to.deep.equal({
      grpcStatus: "3",
      grpcMessage: unknownKey("toolruntime.v1.GetToolRequest", "nmae"),
    });
    const streaming = await post(
      server.httpUrl,
      runTool,
      "application/connect+json",
      frame('{"toolName":"builtin.echo","input":{}}'),
    );
    const end = JSON.parse(frameWithFlag(streaming.body, 0x02).toString()) as {
      error?: { code: string; message: string };
    };
    expect(end.error).to.deep.equal({
      code: "invalid_argument",
      message: unknownKey("toolruntime.v1.RunToolRequest", "input"),
    });
  });
});

describe("Unknown fields in JSON requests with jsonIgnoreUnknownFields", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ jsonIgnoreUnknownFields: true });
  });
  after(async () => {
    await server.close(0);
  });

  it("drops them, as a client built against a newer contract needs", async () => {
    const answer = await post(
      server.httpUrl,
      getTool,
      "application/json",
      JSON.stringify({ name: "builtin.echo", fieldOfANewerContract: true }),
    );
    expect(answer.status, answer.body.toString()).to.equal(200);
    expect(JSON.parse(answer.body.toString())).to.nested.include({ "spec.name": "builtin.echo" });
  });
});
