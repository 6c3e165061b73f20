import { postMcp } from "../support/mcp-post.js";
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { Writable } from "node:stream";
import { pino } from "pino";
import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { createProvider, type Provider } from "../../src/providers/create-provider.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import {
  connectMcpClient,
  mcpClientLines,
  type CallResult,
  type ListedTool,
  type McpTestClient,
  type ProgressReport,
} from "../support/mcp-clients.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

/** What a client SDK throws for a JSON-RPC error. */
interface RpcFailure {
  readonly code: number;
  readonly message: string;
  readonly data?: { readonly code?: string; readonly "io.toolruntime/tool_error"?: Record<string, unknown> };
}

async function rpcFailure(promise: Promise<unknown>): Promise<RpcFailure> {
  try {
    await promise;
  } catch (error) {
    return error as RpcFailure;
  }
  throw new Error("the call should have failed");
}

const remoteTool = defineTool({
  name: "remote.add",
  description: "Adds a and b.",
  capabilities: { readOnly: true },
  inputSchema: { type: "object", required: ["a", "b"], properties: { a: { type: "number" }, b: { type: "number" } } },
  outputSchema: { type: "object", required: ["sum"], properties: { sum: { type: "number" } } },
  handler: (inputs) => ({ sum: Number(inputs["a"]) + Number(inputs["b"]) }),
});

describe("MCP gateway (/mcp)", () => {
  let server: RunningServer;
  let grpc: ClientStack;
  let provider: Provider;
  let url: URL;

  before(async () => {
    server = await startTestServer({ mcp: { pageSize: 2 } });
    url = new URL(`${server.httpUrl}/mcp`);
    grpc = createClientStack("grpc-js", server);
    provider = createProvider({ address: server.grpcAddress, providerName: "remote", tools: [remoteTool] });
    await provider.connected;
    // A tool registered over the wire with no provider cannot run here: it is not listed.
    await grpc.registry.registerTool({
      spec: create(ToolSpecSchema, { name: "orphan.tool", description: "no handler" }),
    });
  });
  after(async () => {
    provider.close();
    grpc.close();
    await server.close(0);
  });

  for (const line of mcpClientLines) {
    describe(`with the ${line} client`, () => {
      let client: McpTestClient;
      before(async () => {
        client = await connectMcpClient(line, url);
      });
      after(async () => {
        await client.close();
      });

      it("speaks the revision of its line", () => {
        expect(client.protocolVersion).to.equal(line === "v2 pinned 2026-07-28" ? "2026-07-28" : "2025-11-25");
      });

      it("lists every tool that can run here, in name order, two per page", async () => {
        const names: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await client.listPage(cursor);
          expect(page.tools.length).to.be.at.most(2);
          names.push(...page.tools.map((tool) => tool.name));
          cursor = page.nextCursor;
          pages += 1;
        } while (cursor !== undefined);
        const expected = server.runtime.registries.default
          .snapshot()
          .tools.filter((tool) => tool.spec.hasHandler)
          .map((tool) => tool.spec.name);
        expect(names).to.deep.equal(expected);
        expect(names).to.include.members(["builtin.echo", "remote.add", "test.unsafe"]);
        expect(names).to.not.include("orphan.tool");
        expect(pages).to.equal(Math.ceil(expected.length / 2));
      });

      it("refuses a cursor it did not give with -32602", async () => {
        const failure = await rpcFailure(client.listPage("not a cursor"));
        expect(failure.code).to.equal(-32602);
        expect(failure.data?.code).to.equal("invalid_argument");
      });

      it("derives annotations from every flag and carries all six in _meta", async () => {
        const tools = await listAll(client);
        const byName = new Map(tools.map((tool) => [tool.name, tool]));
        const flagsOf = (name: string) => {
          const tool = byName.get(name) as ListedTool;
          return { annotations: tool.annotations, flags: tool._meta?.["io.toolruntime/capabilities"] };
        };
        const none = {
          read_only: false,
          writes: false,
          checkpointable: false,
          idempotent: false,
          unsafe: false,
          human_approval_required: false,
        };
        expect(flagsOf("builtin.echo")).to.deep.equal({
          annotations: { title: "builtin.echo", readOnlyHint: true, destructiveHint: false, idempotentHint: true },
          flags: { ...none, read_only: true, idempotent: true },
        });
        expect(flagsOf("test.checkpointed")).to.deep.equal({
          annotations: {
            title: "test.checkpointed",
            readOnlyHint: false,
            destructiveHint: true,
            idempotentHint: false,
          },
          flags: { ...none, writes: true, checkpointable: true },
        });
        expect(flagsOf("test.flaky")).to.deep.equal({
          annotations: { title: "test.flaky", readOnlyHint: false, destructiveHint: false, idempotentHint: true },
          flags: { ...none, idempotent: true },
        });
        expect(flagsOf("test.unsafe").flags).to.deep.equal({ ...none, unsafe: true });
        expect(flagsOf("test.approval").flags).to.deep.equal({ ...none, writes: true, human_approval_required: true });
        const schema = byName.get("test.schema") as ListedTool;
        expect(schema.description).to.equal(
          "Checks inputs and output against schemas; returns inputs.reply as its output.",
        );
        expect(schema.inputSchema).to.deep.equal({
          type: "object",
          required: ["count"],
          properties: { count: { type: "integer", minimum: 0 }, reply: { type: "object" } },
        });
        expect(schema.outputSchema).to.deep.equal({
          type: "object",
          required: ["total"],
          properties: { total: { type: "number" } },
        });
        expect((byName.get("test.hang") as ListedTool).inputSchema).to.deep.equal({ type: "object" });
      });

      it("calls an in-process tool: structuredContent matching its outputSchema, a JSON text block, the execution id", async () => {
        await listAll(client); // the v2 client checks structuredContent against the listed outputSchema
        const result = await client.callTool("test.schema", { count: 1, reply: { total: 3 } });
        expect(result.isError ?? false).to.equal(false);
        expect(result.structuredContent).to.deep.equal({ total: 3 });
        expect(result.content).to.deep.equal([{ type: "text", text: '{"total":3}' }]);
        const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
        const { execution } = await grpc.executions.getExecution({ executionId });
        expect(execution?.toolName).to.equal("test.schema");
        expect(execution?.state).to.equal(ExecutionState.SUCCEEDED);
        expect(execution?.result?.output).to.deep.equal({ total: 3 });
      });

      it("calls a tool served by a provider over gRPC", async () => {
        const result = await client.callTool("remote.add", { a: 2, b: 5 });
        expect(result.structuredContent).to.deep.equal({ sum: 7 });
      });

      it("forwards progress in order, numbered by event sequence, before the result", async () => {
        const reports: ProgressReport[] = [];
        const result = await client.callTool(
          "builtin.countdown",
          { from: 3, interval_ms: 0 },
          { onprogress: (report) => reports.push(report) },
        );
        expect(result.structuredContent).to.deep.equal({ counted: 3 });
        const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
        expect(reports.map((report) => report.message)).to.deep.equal([
          `run ${executionId} of builtin.countdown started (attempt 1)`,
          "0% 3 to go",
          "33% 2 to go",
          "67% 1 to go",
          "100% done",
        ]);
        const sequences = reports.map((report) => report.progress);
        expect(sequences).to.deep.equal([...sequences].sort((a, b) => a - b));
        expect(new Set(sequences).size).to.equal(sequences.length);
      });

      it("carries the tool's fraction as progress / total, and no total where there is no fraction above 0", async () => {
        const reports: ProgressReport[] = [];
        await client.callTool(
          "builtin.countdown",
          { from: 3, interval_ms: 0 },
          { onprogress: (report) => reports.push(report) },
        );
        // The start has no fraction; "0% 3 to go" has 0, which no finite total expresses.
        expect(reports.map((report) => report.total === undefined)).to.deep.equal([true, true, false, false, false]);
        const [, , third, twoThirds, done] = reports;
        expect((third?.progress ?? 0) / (third?.total ?? 0)).to.be.closeTo(1 / 3, 1e-12);
        expect((twoThirds?.progress ?? 0) / (twoThirds?.total ?? 0)).to.be.closeTo(2 / 3, 1e-12);
        expect(done?.total).to.equal(done?.progress);
      });

      it("cancels the run when the client cancels the call: CANCELLED through GetExecution", async () => {
        const controller = new AbortController();
        const waiting = new Promise<string>((resolve) => testToolEvents.once("waiting", resolve));
        const aborted = new Promise<string>((resolve) => testToolEvents.once("aborted", resolve));
        const call = client.callTool("test.wait_for_cancel", {}, { signal: controller.signal });
        call.catch(() => undefined);
        const executionId = await waiting;
        controller.abort();
        expect(await aborted).to.equal(executionId);
        await server.runtime.executions.get(executionId).done;
        const { execution } = await grpc.executions.getExecution({ executionId });
        expect(execution?.state).to.equal(ExecutionState.CANCELLED);
        expect(execution?.result?.error?.errorType).to.equal("CancelledError");
        expect(execution?.result?.error?.details).to.contain("the MCP client cancelled the call");
      });

      it("answers an unknown tool with -32602 and the NotFoundError", async () => {
        const failure = await rpcFailure(client.callTool("no.such_tool"));
        expect(failure.code).to.equal(-32602);
        expect(failure.message).to.contain('tool "no.such_tool" is not registered in registry "default"');
        expect(failure.data?.code).to.equal("not_found");
        expect(failure.data?.["io.toolruntime/tool_error"]).to.deep.include({
          tool_name: "no.such_tool",
          error_type: "NotFoundError",
        });
      });

      it("answers an invalid tool name with -32602 and the InvalidRequestError", async () => {
        const failure = await rpcFailure(client.callTool("Not A Name"));
        expect(failure.code).to.equal(-32602);
        expect(failure.data?.code).to.equal("invalid_argument");
        expect(failure.data?.["io.toolruntime/tool_error"]?.["error_type"]).to.equal("InvalidRequestError");
      });

      it("refuses an unsafe tool unless _meta acknowledges it", async () => {
        const failure = await rpcFailure(client.callTool("test.unsafe"));
        expect(failure.code).to.equal(-32000);
        expect(failure.message).to.contain('tool "test.unsafe" is flagged unsafe');
        expect(failure.data?.code).to.equal("failed_precondition");
        expect(failure.data?.["io.toolruntime/tool_error"]?.["error_type"]).to.equal("UnsafeNotAcknowledgedError");
        const result = await client.callTool(
          "test.unsafe",
          {},
          { meta: { "io.toolruntime/acknowledge_unsafe": true } },
        );
        expect(result.isError ?? false).to.equal(false);
        expect(result.structuredContent).to.deep.equal({});
      });

      for (const [name, args, meta, errorType, fragment] of [
        ["test.throw_error", {}, {}, "HandlerError", 'handler of "test.throw_error" failed: TypeError: bad thing'],
        ["test.schema", { count: -1 }, {}, "InputValidationError", "inputs"],
        ["test.schema", { count: 1, reply: { total: "x" } }, {}, "OutputValidationError", "output"],
        ["test.hang", {}, { "io.toolruntime/timeout_ms": 50 }, "TimeoutError", "50 ms"],
      ] as const) {
        it(`reports a run that failed with ${errorType} as isError with the ToolError in _meta`, async () => {
          const result: CallResult = await client.callTool(name, { ...args }, { meta: { ...meta } });
          expect(result.isError).to.equal(true);
          expect(result.structuredContent).to.equal(undefined);
          const error = result._meta?.["io.toolruntime/error"] as Record<string, string>;
          expect(error["tool_name"]).to.equal(name);
          expect(error["error_type"]).to.equal(errorType);
          expect(error["details"]).to.contain(fragment);
          expect(result.content).to.deep.equal([{ type: "text", text: `${errorType}: ${error["details"]}` }]);
        });
      }

      it("waits for an approval given through ApproveExecution, announced with the run's id and inputs digest", async () => {
        let announced: (message: string) => void = () => undefined;
        const announcement = new Promise<string>((resolve) => (announced = resolve));
        const call = client.callTool(
          "test.approval",
          { why: "test" },
          {
            onprogress: (report) => {
              if (report.message?.includes("awaits approval")) announced(report.message);
            },
          },
        );
        const message = await announcement;
        const match = /execution_id "([^"]+)", inputs_digest "([0-9a-f]{64})"/.exec(message);
        expect(match, message).to.not.equal(null);
        const [, executionId, inputsDigest] = match as unknown as [string, string, string];
        const approved = await grpc.executions.approveExecution({ executionId, inputsDigest, comment: "fine" });
        expect(approved.execution?.approval?.approved).to.equal(true);
        const result = await call;
        expect(result.structuredContent).to.deep.equal({ done: true });
        expect(result._meta?.["io.toolruntime/execution_id"]).to.equal(executionId);
        const metadata = result._meta?.["io.toolruntime/metadata"] as {
          approval?: { approved: boolean; comment: string };
        };
        expect(metadata.approval).to.deep.include({ approved: true, comment: "fine" });
      });

      it("tells the client when a tool is registered over gRPC (list_changed)", async () => {
        await client.listening;
        const changed = client.nextListChanged();
        const name = `changed.${line.replaceAll(/[^a-z0-9]/g, "_")}`;
        await grpc.registry.registerTool({ spec: create(ToolSpecSchema, { name }) });
        await changed;
        await grpc.registry.removeTool({ name });
      });
    });
  }
});

describe("MCP gateway without a client library", () => {
  let server: RunningServer;
  let url: URL;
  before(async () => {
    server = await startTestServer({ corsOrigins: ["http://app.example"] });
    url = new URL(`${server.httpUrl}/mcp`);
  });
  after(() => server.close(0));

  const post = (body: unknown, signal?: AbortSignal) => postMcp(url, body, signal);

  it("cancels the run when a 2025-era client drops its tools/call request", async () => {
    const controller = new AbortController();
    const waiting = new Promise<string>((resolve) => testToolEvents.once("waiting", resolve));
    const aborted = new Promise<string>((resolve) => testToolEvents.once("aborted", resolve));
    const response = post(
      { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "test.wait_for_cancel", arguments: {} } },
      controller.signal,
    );
    response.catch(() => undefined);
    const executionId = await waiting;
    controller.abort();
    expect(await aborted).to.equal(executionId);
    const result = await server.runtime.executions.get(executionId).done;
    expect(result.error?.errorType).to.equal("CancelledError");
  });

  it("cancels the run when the cancellation comes inside a batch (protocol versions before 2025-06-18)", async () => {
    const waiting = new Promise<string>((resolve) => testToolEvents.once("waiting", resolve));
    const aborted = new Promise<string>((resolve) => testToolEvents.once("aborted", resolve));
    const call = post({
      jsonrpc: "2.0",
      id: 71,
      method: "tools/call",
      params: { name: "test.wait_for_cancel", arguments: {} },
    });
    call.catch(() => undefined);
    const executionId = await waiting;
    const cancel = await post([{ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 71 } }]);
    expect(cancel.status).to.equal(202);
    expect(await aborted).to.equal(executionId);
    const result = await server.runtime.executions.get(executionId).done;
    expect(result.error?.errorType).to.equal("CancelledError");
  });

  it("answers a tools/list cursor that is not a string with -32602 Invalid params", async () => {
    for (const cursor of [5, null, { page: 2 }]) {
      const response = await post({ jsonrpc: "2.0", id: 8, method: "tools/list", params: { cursor } });
      const answer = (await response.json()) as { error: { code: number; message: string }; id: unknown };
      expect(answer.id).to.equal(8);
      expect(answer.error.code, JSON.stringify(cursor)).to.equal(-32602);
      expect(answer.error.message).to.contain("cursor must be a string");
    }
  });

  it("hands out a session id at initialize, and none otherwise", async () => {
    const initialize = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    expect(initialize.status).to.equal(200);
    expect(initialize.headers.get("mcp-session-id")).to.match(/^[0-9a-f-]{36}$/);
    const list = await post({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
    expect(list.status).to.equal(200);
    expect(list.headers.get("mcp-session-id")).to.equal(null);
  });

  it("answers a malformed initialize with -32602 Invalid params and 400, without a session id", async () => {
    const malformed = [
      { jsonrpc: "2.0", id: 1, method: "initialize" },
      { jsonrpc: "2.0", id: "a", method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {} } },
      {
        jsonrpc: "2.0",
        id: 3,
        method: "initialize",
        params: { protocolVersion: 5, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      },
    ];
    for (const body of malformed) {
      const response = await post(body);
      expect(response.status, JSON.stringify(body)).to.equal(400);
      expect(response.headers.get("mcp-session-id")).to.equal(null);
      const answer = (await response.json()) as { error: { code: number; message: string }; id: unknown };
      expect(answer.id).to.equal(body.id);
      expect(answer.error.code).to.equal(-32602);
      expect(answer.error.message).to.match(/^Invalid params: initialize takes params with protocolVersion/);
    }
  });

  it("answers a body over the message limit with 413 before the SDK sees it", async () => {
    const response = await post({
      jsonrpc: "2.0",
      id: 9,
      method: "tools/list",
      params: { pad: "x".repeat(5 * 1024 * 1024) },
    });
    expect(response.status).to.equal(413);
    expect(await response.json()).to.deep.equal({
      jsonrpc: "2.0",
      error: { code: -32000, message: "the request body is larger than 4194304 bytes: send a smaller message" },
      id: null,
    });
  });

  it("answers other methods than GET and POST with 405", async () => {
    const response = await fetch(url, { method: "DELETE" });
    expect(response.status).to.equal(405);
    expect(response.headers.get("allow")).to.equal("GET, POST");
  });

  it("answers the preflight of an allowed origin with MCP's headers", async () => {
    const response = await fetch(url, {
      method: "OPTIONS",
      headers: {
        origin: "http://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, mcp-protocol-version, authorization",
      },
    });
    expect(response.status).to.equal(204);
    expect(response.headers.get("access-control-allow-origin")).to.equal("http://app.example");
    const allowed = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/);
    expect(allowed).to.include.members(["content-type", "mcp-protocol-version", "mcp-session-id", "authorization"]);
  });

  it("gives another origin no CORS headers", async () => {
    const response = await post({ jsonrpc: "2.0", id: 3, method: "tools/list", params: {} });
    expect(response.headers.get("access-control-allow-origin")).to.equal(null);
    const fromOther = await fetch(url, {
      method: "POST",
      headers: {
        origin: "http://other.example",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/list", params: {} }),
    });
    expect(fromOther.headers.get("access-control-allow-origin")).to.equal(null);
  });
});

describe("MCP gateway logs", () => {
  it("writes one call line per MCP request, like the RPCs'", async () => {
    let logged: (line: Record<string, unknown>) => void = () => undefined;
    const line = new Promise<Record<string, unknown>>((resolve) => (logged = resolve));
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        const record = JSON.parse(chunk.toString("utf8")) as Record<string, unknown>;
        if (record["msg"] === "call" && record["protocol"] === "mcp") logged(record);
        done();
      },
    });
    const server = await startTestServer({ logger: pino({ level: "debug" }, destination) });
    try {
      const response = await fetch(`${server.httpUrl}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      expect(response.status).to.equal(200);
      await response.text();
      expect(await line).to.deep.include({
        rpc: "mcp/tools/list",
        protocol: "mcp",
        caller: "anonymous",
        status: 200,
        code: "OK",
      });
    } finally {
      await server.close(0);
    }
  });
});

describe("MCP gateway shutdown", () => {
  it("ends the list_changed streams at once, so they do not hold the port's drain", async () => {
    const server = await startTestServer();
    const client = await connectMcpClient("v1 sdk", new URL(`${server.httpUrl}/mcp`));
    await client.listening;
    const graceMs = 10_000;
    const startedAt = performance.now();
    await server.close(graceMs);
    // With the stream left open, close() would wait for the whole grace period.
    expect(performance.now() - startedAt).to.be.below(graceMs / 2);
    await client.close();
  });
});

describe("MCP gateway authentication", () => {
  const tokens = { reader: "reader-token-0123456789", admin: "admin-token-0123456789" };
  const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
  let server: RunningServer;
  let url: URL;

  before(async () => {
    server = await startTestServer({
      identities: [
        {
          name: "reader",
          tokenSha256: [sha256(tokens.reader)],
          grants: [
            { actions: ["read", "execute"], patterns: ["builtin.*"] },
            { actions: ["read"], patterns: ["test.unsafe"] },
          ],
        },
        { name: "admin", tokenSha256: [sha256(tokens.admin)], grants: [{ actions: ["admin"], patterns: ["*"] }] },
      ],
    });
    url = new URL(`${server.httpUrl}/mcp`);
  });
  after(() => server.close(0));

  it("answers a request without credentials with 401 and a bearer challenge", async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(response.status).to.equal(401);
    expect(response.headers.get("www-authenticate")).to.equal('Bearer realm="toolruntime"');
    expect(await response.json()).to.deep.equal({
      jsonrpc: "2.0",
      error: {
        code: -32000,
        message: 'the call carries no credentials: send "authorization: Bearer <token>" or a client certificate',
      },
      id: null,
    });
  });

  for (const line of mcpClientLines) {
    describe(`with the ${line} client`, () => {
      it("refuses to connect with an unknown token", async () => {
        let failed = false;
        try {
          const client = await connectMcpClient(line, url, "wrong-token");
          await client.close();
        } catch {
          failed = true;
        }
        expect(failed).to.equal(true);
      });

      it("lists only what the identity may read, and refuses what it may not execute", async () => {
        const client = await connectMcpClient(line, url, tokens.reader);
        try {
          const names = (await listAll(client)).map((tool) => tool.name);
          expect(names).to.deep.equal([
            "builtin.countdown",
            "builtin.echo",
            "builtin.json_pointer",
            "builtin.noop",
            "builtin.sleep",
            "test.unsafe",
          ]);
          const echoed = await client.callTool("builtin.echo", { a: 1 });
          expect(echoed.structuredContent).to.deep.equal({ echo: { a: 1 } });
          const failure = await rpcFailure(
            client.callTool("test.unsafe", {}, { meta: { "io.toolruntime/acknowledge_unsafe": true } }),
          );
          expect(failure.code).to.equal(-32000);
          // The v1 client prefixes "MCP error -32000: " to the server's message.
          expect(failure.message).to.match(
            /(^|: )identity "reader" may not execute tool "test\.unsafe": grant it "execute" on a pattern matching the name$/,
          );
          expect(failure.data?.code).to.equal("permission_denied");
          expect(failure.data?.["io.toolruntime/tool_error"]?.["error_type"]).to.equal("PermissionDeniedError");
        } finally {
          await client.close();
        }
      });

      it("records runs as the identity's", async () => {
        const client = await connectMcpClient(line, url, tokens.admin);
        try {
          const result = await client.callTool("builtin.noop");
          const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
          expect(server.runtime.executions.get(executionId).owner).to.equal("admin");
        } finally {
          await client.close();
        }
      });
    });
  }
});

async function listAll(client: McpTestClient): Promise<ListedTool[]> {
  const tools: ListedTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listPage(cursor);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

describe("MCP gateway metrics", () => {
  const tokens = { admin: "admin-token-0123456789", reader: "reader-token-0123456789" };
  const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
  let server: RunningServer;
  let url: URL;
  before(async () => {
    server = await startTestServer({
      identities: [
        { name: "admin", tokenSha256: [sha256(tokens.admin)], grants: [{ actions: ["admin"], patterns: ["*"] }] },
        {
          name: "reader",
          tokenSha256: [sha256(tokens.reader)],
          grants: [{ actions: ["read", "execute"], patterns: ["builtin.*"] }],
        },
      ],
    });
    url = new URL(`${server.httpUrl}/mcp`);
  });
  after(() => server.close(0));

  const post = (body: unknown, token?: string) =>
    fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify(body),
    });

  it("counts and times each request in the RPC metrics: service and protocol mcp, the MCP method, the outcome's code", async () => {
    const legacy = await connectMcpClient("v1 sdk", url, tokens.admin);
    const modern = await connectMcpClient("v2 pinned 2026-07-28", url, tokens.admin);
    const reader = await connectMcpClient("v2 default", url, tokens.reader);
    try {
      expect((await legacy.callTool("builtin.echo", { a: 1 })).structuredContent).to.deep.equal({ echo: { a: 1 } });
      expect((await modern.callTool("builtin.echo", { a: 2 })).structuredContent).to.deep.equal({ echo: { a: 2 } });
      expect((await legacy.callTool("test.throw_error")).isError).to.equal(true);
      expect((await rpcFailure(modern.callTool("no.such_tool"))).code).to.equal(-32602);
      expect((await rpcFailure(reader.callTool("test.approval"))).data?.code).to.equal("permission_denied");
    } finally {
      await Promise.all([legacy.close(), modern.close(), reader.close()]);
    }
    const unauthenticated = await post({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    expect(unauthenticated.status).to.equal(401);
    await unauthenticated.text();
    const unknownMethod = await post({ jsonrpc: "2.0", id: 2, method: "no/such_method", params: {} }, tokens.admin);
    expect(((await unknownMethod.text()).match(/"code":(-?\d+)/) ?? [])[1]).to.equal("-32601");
    const notJsonRpc = await post({ hello: "world" }, tokens.admin);
    await notJsonRpc.text();

    const scraped = await fetch(`${server.httpUrl}/metrics`, { headers: { authorization: `Bearer ${tokens.admin}` } });
    const text = await scraped.text();
    const series = (name: string, method: string, code?: string): number => {
      const labels = `service="mcp",method="${method}",protocol="mcp"${code === undefined ? "" : `,code="${code}"`}`;
      const line = text.split("\n").find((candidate) => candidate.startsWith(`${name}{${labels}}`));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
    };
    const requests = (method: string, code: string) => series("toolruntime_rpc_requests_total", method, code);
    // A run that failed is a tools/call that succeeded (its failure is in the result), as for ExecuteTool.
    expect(requests("tools/call", "OK")).to.equal(3);
    expect(requests("tools/call", "NOT_FOUND")).to.equal(1);
    expect(requests("tools/call", "PERMISSION_DENIED")).to.equal(1);
    expect(requests("(unknown)", "UNAUTHENTICATED")).to.equal(1);
    expect(requests("(other)", "UNIMPLEMENTED")).to.equal(1);
    expect(requests("(invalid)", "INVALID_ARGUMENT")).to.equal(1);
    expect(requests("initialize", "OK")).to.equal(2);
    expect(requests("notifications/initialized", "OK")).to.equal(2);
    expect(requests("server/discover", "OK")).to.be.at.least(1);
    expect(series("toolruntime_rpc_duration_seconds_count", "tools/call")).to.equal(5);
  });
});
