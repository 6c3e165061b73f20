// A tool whose provider is offline (it disconnected; its activations are kept) answers UNAVAILABLE
// with "ProviderUnavailableError" and a retry_after_ms, so that a client can decide in code to
// retry; a mistyped name stays NOT_FOUND. On gRPC, Connect and MCP alike.
import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import { createProvider } from "../../src/providers/create-provider.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError } from "../support/expect-error.js";
import { postMcp } from "../support/mcp-post.js";
import { startTestServer } from "../support/test-server.js";

/** Where an MCP error's data carries the ToolError (see mcp-meta.ts). */
const toolErrorKey = "io.toolruntime/tool_error";
const offline = 'tool "gone.upper" is served by provider "gone", which is not connected';

describe("A tool whose provider is offline", () => {
  let server: RunningServer;
  let clients: ClientStack[];

  before(async () => {
    server = await startTestServer({ providers: { heartbeatIntervalMs: 100, failureTimeoutMs: 1000 } });
    clients = clientStackNames.map((name) => createClientStack(name, server));
    const provider = createProvider({
      address: server.grpcAddress,
      providerName: "gone",
      reconnect: false,
      tools: [defineTool({ name: "gone.upper", handler: () => ({ text: "X" }) })],
    });
    await provider.connected;
    const [first] = clients;
    await first!.runner.activateTool({ runner: "kept", toolName: "gone.upper" });
    // The tool is removed (as offline) once the server has seen the stream end.
    const abort = new AbortController();
    const changes = first!.registry.watchTools({}, { signal: abort.signal })[Symbol.asyncIterator]();
    // Through the snapshot first: the watch follows the registry before the provider leaves.
    for (;;) {
      const next = await changes.next();
      if (next.done || next.value.type === ToolChangeType.SNAPSHOT_END) break;
    }
    const removed = (async () => {
      for (;;) {
        const next = await changes.next();
        if (next.done) throw new Error("the watch ended before the tool was removed");
        if (next.value.type === ToolChangeType.REMOVED && next.value.spec?.name === "gone.upper") return;
      }
    })();
    provider.close();
    await provider.closed;
    await removed;
    abort.abort();
  });
  after(async () => {
    for (const client of clients) client.close();
    await server.close(0);
  });

  for (const stack of clientStackNames) {
    it(`answers UNAVAILABLE with ProviderUnavailableError and retry_after_ms over ${stack}`, async () => {
      const client = clients[clientStackNames.indexOf(stack)]!;
      const calls = [
        () => client.registry.getTool({ name: "gone.upper" }),
        () => client.runner.executeTool({ runner: "kept", toolName: "gone.upper", inputs: {} }),
        () => client.runner.activateTool({ runner: "other", toolName: "gone.upper" }),
        () => client.executions.startExecution({ toolName: "gone.upper", inputs: {} }),
      ];
      for (const call of calls) {
        const error = await expectToolError(call(), Code.Unavailable, "ProviderUnavailableError", offline);
        expect(error.toolName).to.equal("gone.upper");
        expect(error.retryAfterMs).to.equal(1000);
      }
    });

    it(`keeps NOT_FOUND with NotFoundError for a mistyped name over ${stack}`, async () => {
      const client = clients[clientStackNames.indexOf(stack)]!;
      const error = await expectToolError(
        client.runner.executeTool({ runner: "kept", toolName: "gone.uper", inputs: {} }),
        Code.NotFound,
        "NotFoundError",
        'tool "gone.uper" is not registered',
      );
      expect(error.retryAfterMs).to.equal(0);
    });
  }

  it("answers MCP tools/call with code unavailable and retry_after_ms, and an unknown name with Invalid Params", async () => {
    const call = async (name: string) => {
      const response = await postMcp(`${server.httpUrl}/mcp`, {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name, arguments: {} },
      });
      // A tools/call may answer as an event stream: its one message is on the "data:" line.
      const text = await response.text();
      const json = text.startsWith("event:") ? (/^data: (.*)$/m.exec(text)?.[1] ?? "") : text;
      return JSON.parse(json) as {
        error?: {
          code: number;
          message: string;
          data: { code: string } & Record<string, Record<string, unknown> | undefined>;
        };
      };
    };
    const unavailable = await call("gone.upper");
    expect(unavailable.error?.code).to.equal(-32000);
    expect(unavailable.error?.message).to.contain(offline);
    expect(unavailable.error?.data.code).to.equal("unavailable");
    const unknown = await call("gone.uper");
    expect(unknown.error?.code).to.equal(-32602);
    expect(unknown.error?.data.code).to.equal("not_found");
    // The ToolError travels under the MCP meta key; its retry_after_ms is set for the offline tool only.
    const offlineError = unavailable.error?.data[toolErrorKey];
    expect(offlineError?.["error_type"]).to.equal("ProviderUnavailableError");
    expect(offlineError?.["retry_after_ms"]).to.equal(1000);
    const unknownError = unknown.error?.data[toolErrorKey];
    expect(unknownError?.["error_type"]).to.equal("NotFoundError");
    expect(unknownError).to.not.have.property("retry_after_ms");
  });
});
