import { expect } from "chai";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";

const tooDeep = "the request's JSON nests arrays and objects deeper than 1,000 levels: send a flatter message";
const nested = (depth: number): string => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("JSON nested past the bound", function () {
  this.timeout(30_000);
  let server: RunningServer;

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close(0);
  });

  const post = (path: string, contentType: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${server.httpUrl}${path}`, { method: "POST", headers: { "content-type": contentType, ...headers }, body });

  it("is refused INVALID_ARGUMENT on a Connect unary call before it is parsed; 1,000 levels are parsed as before", async () => {
    const refused = await post(
      "/toolruntime.v1.RunnerService/ExecuteTool",
      "application/json",
      `{"toolName":"builtin.echo","inputs":{"a":${nested(1_000_000)}}}`,
    );
    expect(refused.status).to.equal(400);
    expect(await refused.json()).to.deep.include({ code: "invalid_argument", message: tooDeep });

    // Within the bound, the request is read, and its inputs meet their own limit (64 levels).
    const parsed = await post(
      "/toolruntime.v1.RunnerService/ExecuteTool",
      "application/json",
      `{"toolName":"builtin.echo","inputs":{"a":${nested(990)}}}`,
    );
    const answer = (await parsed.json()) as { message?: string };
    expect(answer.message ?? "").to.not.equal(tooDeep);
  });

  it("is refused INVALID_ARGUMENT on a Connect streaming call, in its end-of-stream message", async () => {
    const message = new TextEncoder().encode(`{"toolName":"builtin.echo","inputs":{"a":${nested(5_000)}}}`);
    const envelope = new Uint8Array(5 + message.length);
    new DataView(envelope.buffer).setUint32(1, message.length);
    envelope.set(message, 5);
    const response = await post("/toolruntime.v1.RunnerService/RunTool", "application/connect+json", envelope);
    expect(response.status).to.equal(200);
    const body = new Uint8Array(await response.arrayBuffer());
    expect(body[0]).to.equal(2); // the end-of-stream flag
    const end = JSON.parse(new TextDecoder().decode(body.subarray(5))) as { error?: { code: string; message: string } };
    expect(end.error).to.deep.equal({ code: "invalid_argument", message: tooDeep });
  });

  it("is refused with a JSON-RPC error at /mcp before it is parsed", async () => {
    const response = await post(
      "/mcp",
      "application/json",
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"builtin.echo","arguments":{"a":${nested(1_000_000)}}}}`,
      { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
    );
    expect(response.status).to.equal(400);
    expect(await response.json()).to.deep.equal({
      jsonrpc: "2.0",
      error: { code: -32000, message: tooDeep },
      id: null,
    });
  });
});
