import { expect } from "chai";
import http2 from "node:http2";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";

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

/** The contents of the frame of `body` whose flags are `flags`; empty when there is none. */
function frameWithFlag(body: Buffer, flags: number): string {
  for (let offset = 0; offset + 5 <= body.length;) {
    const length = body.readUInt32BE(offset + 1);
    if (body[offset] === flags) return body.subarray(offset + 5, offset + 5 + length).toString();
    offset += 5 + length;
  }
  return "";
}

/** POSTs `body` over cleartext HTTP/2 with `contentType`; resolves to the status, trailers folded into headers, and the body. */
async function post(
  baseUrl: string,
  path: string,
  contentType: string,
  body: Buffer | string,
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: Buffer }> {
  const session = http2.connect(baseUrl);
  try {
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers" });
    const answer = new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: Buffer }>(
      (resolve, reject) => {
        let headers: http2.IncomingHttpHeaders = {};
        const chunks: Buffer[] = [];
        stream.on("response", (received) => (headers = received));
        stream.on("trailers", (trailers: http2.IncomingHttpHeaders) => (headers = { ...headers, ...trailers }));
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => resolve({ status: Number(headers[":status"]), headers, body: Buffer.concat(chunks) }));
        stream.on("error", reject);
      },
    );
    stream.end(body);
    return await answer;
  } finally {
    session.close();
  }
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
    const trailers = frameWithFlag(grpcWeb.body, 0x80);
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
    const end = JSON.parse(frameWithFlag(streaming.body, 0x02)) as { error?: { code: string; message: string } };
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
