import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { announceReady, exitOnSignals, readServerArgs } from "./server-args.js";

/** The MCP server of one request, with the no-op tool: `noop` takes nothing and returns nothing. */
function createNoopServer(): McpServer {
  const server = new McpServer({ name: "bench-noop", version: "1.0.0" });
  server.registerTool("noop", { description: "Does nothing and returns no content." }, () => ({ content: [] }));
  return server;
}

/**
 * The peer: a no-op tool served by the MCP TypeScript SDK over stateless Streamable HTTP on Node's
 * HTTP/1.1 server. Stateless transports cannot be reused across requests, so each POST gets a fresh
 * server and transport, as the SDK's stateless example does (no `sessionIdGenerator`: stateless). Responses are plain JSON
 * (`enableJsonResponse`), the SDK's cheapest answer, rather than an event stream.
 */
async function main(): Promise<void> {
  const args = readServerArgs();
  const httpServer = http.createServer((request, response) => {
    if (request.method !== "POST") {
      response.writeHead(405).end();
      return;
    }
    const server = createNoopServer();
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    response.once("close", () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(request, response))
      .catch((error: unknown) => {
        process.stderr.write(`mcp-noop-server: ${String(error)}\n`);
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(args.port, args.host, () => resolve());
  });
  const address = httpServer.address();
  if (address === null || typeof address === "string") throw new Error("the server has no port");
  exitOnSignals(() => undefined);
  announceReady(address.port);
}

main().catch((error: unknown) => {
  process.stderr.write(`mcp-noop-server: ${String(error)}\n`);
  process.exit(1);
});
