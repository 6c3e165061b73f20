import { Client as GrpcClient, credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createHash } from "node:crypto";
import http from "node:http";
import http2 from "node:http2";
import { GetToolRequestSchema, GetToolResponseSchema } from "../../gen/toolruntime/v1/registry_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";

/** An answer of the HTTP port: its status, and its body as text. */
interface Answer {
  readonly status: number;
  readonly body: string;
}

/** POSTs `body` (JSON) over HTTP/1.1 to 127.0.0.1:`port`, naming `headers.host` and `headers.origin` as given. */
function postHttp1(port: number, path: string, body: unknown, headers: http.OutgoingHttpHeaders): Promise<Answer> {
  return requestHttp1(port, "POST", path, JSON.stringify(body), {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...headers,
  });
}

function requestHttp1(
  port: number,
  method: string,
  path: string,
  body: string | undefined,
  headers: http.OutgoingHttpHeaders,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(body);
  });
}

/** POSTs `body` (JSON) over cleartext HTTP/2 to 127.0.0.1:`port` with `authority` as `:authority`. */
async function postHttp2(port: number, path: string, body: unknown, authority: string): Promise<Answer> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      ":authority": authority,
      "content-type": "application/json",
    });
    const answer = new Promise<Answer>((resolve, reject) => {
      let statusCode = 0;
      const chunks: Buffer[] = [];
      stream.on("response", (headers) => (statusCode = Number(headers[":status"])));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ status: statusCode, body: Buffer.concat(chunks).toString() }));
      stream.on("error", reject);
    });
    stream.end(JSON.stringify(body));
    return await answer;
  } finally {
    session.close();
  }
}

/** A unary call on the gRPC port through grpc-js, naming `authority` as the channel's `:authority`. */
function grpcUnary(
  address: string,
  authority: string,
  path: string,
  request: Uint8Array,
): Promise<{ error: ServiceError | null; response: Buffer | undefined }> {
  const client = new GrpcClient(address, credentials.createInsecure(), { "grpc.default_authority": authority });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (bytes: Uint8Array) => Buffer.from(bytes),
      (bytes: Buffer) => bytes,
      request,
      new Metadata(),
      { deadline: Date.now() + 10_000 },
      (error, response) => {
        client.close();
        resolve({ error, response });
      },
    );
  });
}

const getTool = "/toolruntime.v1.RegistryService/GetTool";
const executeTool = "/toolruntime.v1.RunnerService/ExecuteTool";
const activateTool = "/toolruntime.v1.RunnerService/ActivateTool";
const hostRefusal = (host: string) =>
  `host "${host}" is not served while authentication is off (DNS rebinding protection): call localhost, 127.0.0.1 or [::1], or allow the name with --allowed-host ${host}`;
const originRefusal = (origin: string) =>
  `origin "${origin}" may not call this server while authentication is off (DNS rebinding protection): serve the page from the server's own origin, or allow it with --cors-origin ${origin}`;
const callToolRequest = {
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name: "builtin.echo", arguments: { said: "hi" } },
};

describe("DNS rebinding protection with authentication off", () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    server = await startTestServer({
      corsOrigins: ["https://app.example.com"],
      allowedHosts: ["toolruntime.internal"],
    });
    port = Number(new URL(server.httpUrl).port);
    const activated = await postHttp1(port, activateTool, { toolName: "builtin.echo" }, { host: `127.0.0.1:${port}` });
    expect(activated.status, activated.body).to.equal(200);
  });
  after(async () => {
    await server.close(0);
  });

  describe("the HTTP port", () => {
    it("refuses ExecuteTool naming a foreign Host with 403, a Connect permission_denied naming the host and the option", async () => {
      const answer = await postHttp1(
        port,
        executeTool,
        { toolName: "builtin.echo", inputs: { said: "hi" } },
        { host: `attacker.example:${port}` },
      );
      expect(answer.status).to.equal(403);
      const error = JSON.parse(answer.body) as { code: string; message: string; details: { type: string }[] };
      expect(error.code).to.equal("permission_denied");
      expect(error.message).to.equal(hostRefusal("attacker.example"));
      expect(error.details.map((detail) => detail.type)).to.deep.equal(["toolruntime.v1.ToolError"]);
    });

    it("refuses a foreign HTTP/2 :authority the same way", async () => {
      const answer = await postHttp2(port, getTool, { name: "builtin.echo" }, `attacker.example:${port}`);
      expect(answer.status).to.equal(403);
      expect((JSON.parse(answer.body) as { message: string }).message).to.equal(hostRefusal("attacker.example"));
    });

    it("refuses MCP tools/call naming a foreign Host with 403 and a JSON-RPC error", async () => {
      const answer = await postHttp1(port, "/mcp", callToolRequest, {
        host: `attacker.example:${port}`,
        "mcp-protocol-version": "2025-11-25",
      });
      expect(answer.status).to.equal(403);
      expect(JSON.parse(answer.body)).to.deep.equal({
        jsonrpc: "2.0",
        error: { code: -32000, message: hostRefusal("attacker.example") },
        id: null,
      });
    });

    it("refuses MCP tools/call and ExecuteTool from a foreign Origin, naming the origin and --cors-origin", async () => {
      const origin = "http://attacker.example";
      const mcp = await postHttp1(port, "/mcp", callToolRequest, {
        host: `127.0.0.1:${port}`,
        origin,
        "mcp-protocol-version": "2025-11-25",
      });
      expect(mcp.status).to.equal(403);
      expect((JSON.parse(mcp.body) as { error: { message: string } }).error.message).to.equal(originRefusal(origin));
      const rpc = await postHttp1(
        port,
        executeTool,
        { toolName: "builtin.echo", inputs: {} },
        { host: `localhost:${port}`, origin },
      );
      expect(rpc.status).to.equal(403);
      expect((JSON.parse(rpc.body) as { message: string }).message).to.equal(originRefusal(origin));
      // The page's origin with another port is another origin.
      const otherPort = await postHttp1(
        port,
        getTool,
        { name: "builtin.echo" },
        {
          host: `localhost:${port}`,
          origin: `http://localhost:${port + 1}`,
        },
      );
      expect(otherPort.status).to.equal(403);
      const opaque = await postHttp1(
        port,
        getTool,
        { name: "builtin.echo" },
        { host: `localhost:${port}`, origin: "null" },
      );
      expect(opaque.status).to.equal(403);
    });

    it("refuses /metrics, the console and a preflight naming a foreign Host", async () => {
      const foreign = { host: `rebound.example:${port}` };
      expect((await requestHttp1(port, "GET", "/metrics", undefined, foreign)).status).to.equal(403);
      expect((await requestHttp1(port, "GET", "/console/", undefined, foreign)).status).to.equal(403);
      const preflight = await requestHttp1(port, "OPTIONS", getTool, undefined, {
        host: `127.0.0.1:${port}`,
        origin: "http://attacker.example",
        "access-control-request-method": "POST",
      });
      expect(preflight.status).to.equal(403);
    });

    it("serves loopback names, IP addresses and allowed hosts, over HTTP/1.1 and HTTP/2", async () => {
      for (const host of [
        "localhost",
        "127.0.0.1",
        "[::1]",
        "LocalHost",
        "10.1.2.3",
        "[fd00::1]",
        "toolruntime.internal",
      ]) {
        const overHttp1 = await postHttp1(
          port,
          executeTool,
          { toolName: "builtin.echo", inputs: { said: host } },
          {
            host: `${host}:${port}`,
          },
        );
        expect(overHttp1.status, `${host}: ${overHttp1.body}`).to.equal(200);
        expect((JSON.parse(overHttp1.body) as { result: { success: boolean } }).result.success).to.equal(true);
        const overHttp2 = await postHttp2(port, getTool, { name: "builtin.echo" }, `${host}:${port}`);
        expect(overHttp2.status, `${host}: ${overHttp2.body}`).to.equal(200);
      }
    });

    it("serves a page of the server's own origin and of a CORS origin", async () => {
      for (const [host, origin] of [
        [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
        [`localhost:${port}`, `http://localhost:${port}`],
        [`127.0.0.1:${port}`, "https://app.example.com"],
      ] as const) {
        const answer = await postHttp1(port, getTool, { name: "builtin.echo" }, { host, origin });
        expect(answer.status, `${origin}: ${answer.body}`).to.equal(200);
      }
      const mcp = await postHttp1(port, "/mcp", callToolRequest, {
        host: `localhost:${port}`,
        origin: `http://localhost:${port}`,
        "mcp-protocol-version": "2025-11-25",
      });
      expect(mcp.status, mcp.body).to.equal(200);
      expect(mcp.body).to.contain('\\"said\\":\\"hi\\"');
    });

    it("answers /healthz and /readyz whatever the Host and Origin, for probes", async () => {
      const foreign = { host: "my-service.default.svc:8080", origin: "http://attacker.example" };
      const healthz = await requestHttp1(port, "GET", "/healthz", undefined, foreign);
      expect(healthz).to.deep.equal({ status: 200, body: "ok\n" });
      const readyz = await requestHttp1(port, "GET", "/readyz", undefined, foreign);
      expect(readyz).to.deep.equal({ status: 200, body: "ready\n" });
    });
  });

  describe("the gRPC port", () => {
    const request = toBinary(GetToolRequestSchema, create(GetToolRequestSchema, { name: "builtin.echo" }));

    it("answers PERMISSION_DENIED naming the host to a call whose :authority is foreign", async () => {
      const { error } = await grpcUnary(server.grpcAddress, "attacker.example:50051", getTool, request);
      expect(error?.code).to.equal(status.PERMISSION_DENIED);
      expect(error?.details).to.equal(hostRefusal("attacker.example"));
      expect(error?.metadata.get("grpc-status-details-bin")).to.have.length(1);
    });

    it("serves loopback names, IP addresses and allowed hosts", async () => {
      for (const authority of ["localhost:50051", "127.0.0.1", "[::1]:1", "toolruntime.internal:443"]) {
        const { error, response } = await grpcUnary(server.grpcAddress, authority, getTool, request);
        expect(error, authority).to.equal(null);
        expect(fromBinary(GetToolResponseSchema, response as Buffer).spec?.name).to.equal("builtin.echo");
      }
    });

    it("answers grpc.health.v1 whatever the :authority, for probes", async () => {
      // HealthCheckRequest { service: "" } is no bytes; HealthCheckResponse { status: SERVING } is field 1 = 1.
      const { error, response } = await grpcUnary(
        server.grpcAddress,
        "my-service.default.svc:50051",
        "/grpc.health.v1.Health/Check",
        new Uint8Array(0),
      );
      expect(error).to.equal(null);
      expect(response).to.deep.equal(Buffer.from([0x08, 0x01]));
    });
  });
});

describe("DNS rebinding protection with authentication on", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({
      identities: [
        {
          name: "admin",
          tokenSha256: [createHash("sha256").update("admin-token").digest("hex")],
          grants: [{ actions: ["admin"], patterns: ["*"] }],
        },
      ],
    });
  });
  after(async () => {
    await server.close(0);
  });

  it("serves any Host, :authority and Origin to an authenticated call: a page has no token", async () => {
    const port = Number(new URL(server.httpUrl).port);
    const answer = await postHttp1(
      port,
      getTool,
      { name: "builtin.echo" },
      {
        host: `toolruntime.example.com:${port}`,
        origin: "https://elsewhere.example",
        authorization: "Bearer admin-token",
      },
    );
    expect(answer.status, answer.body).to.equal(200);
    const metadata = new Metadata();
    metadata.set("authorization", "Bearer admin-token");
    const client = new GrpcClient(server.grpcAddress, credentials.createInsecure(), {
      "grpc.default_authority": "toolruntime.example.com:50051",
    });
    try {
      const error = await new Promise<ServiceError | null>((resolve) => {
        client.makeUnaryRequest(
          getTool,
          (bytes: Uint8Array) => Buffer.from(bytes),
          (bytes: Buffer) => bytes,
          toBinary(GetToolRequestSchema, create(GetToolRequestSchema, { name: "builtin.echo" })),
          metadata,
          { deadline: Date.now() + 10_000 },
          (failure) => resolve(failure),
        );
      });
      expect(error).to.equal(null);
    } finally {
      client.close();
    }
  });
});
