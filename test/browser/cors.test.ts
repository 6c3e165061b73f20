import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { BrowserContext } from "playwright-core";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { launchChromium } from "../support/chromium.js";
import { startTestServer } from "../support/test-server.js";

/** A static server on 127.0.0.1 whose only page is blank: the origin a test page runs on. */
async function startPageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!doctype html><title>page</title>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface Outcome {
  readonly status?: number;
  readonly json?: unknown;
  readonly grpcStatus?: string | null;
  readonly grpcMessage?: string | null;
  readonly text?: string;
  readonly error?: string;
}

interface Call {
  readonly label: string;
  readonly url: string;
  readonly body: object;
}

/** In the page: a unary Connect call with JSON (which needs a CORS preflight). */
async function connectUnary({ label, url, body }: Call): Promise<Outcome> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: await response.json() };
  } catch (error) {
    return { error: `${label}: ${String(error)}` };
  }
}

/**
 * In the page: a unary gRPC-Web call with the JSON codec (5-byte frame headers, then trailers in a
 * frame of their own), returning the status headers the page can read and the trailer text.
 */
async function grpcWebUnary({ url, body }: Call): Promise<Outcome> {
  try {
    const payload = new TextEncoder().encode(JSON.stringify(body));
    const frame = new Uint8Array(5 + payload.length);
    new DataView(frame.buffer).setUint32(1, payload.length);
    frame.set(payload, 5);
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+json", "x-grpc-web": "1" },
      body: frame,
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    let text = "";
    for (let offset = 0; offset + 5 <= bytes.length;) {
      const length = new DataView(bytes.buffer, offset + 1, 4).getUint32(0);
      text += `${bytes[offset] === 0x80 ? "trailer" : "message"}:${new TextDecoder().decode(bytes.subarray(offset + 5, offset + 5 + length))}\n`;
      offset += 5 + length;
    }
    return {
      status: response.status,
      grpcStatus: response.headers.get("grpc-status"),
      grpcMessage: response.headers.get("grpc-message"),
      text,
    };
  } catch (error) {
    return { error: String(error) };
  }
}

describe("CORS: a page on another origin in headless Chromium", function () {
  // Starting a browser takes a few seconds on a loaded machine.
  this.timeout(90_000);
  let server: RunningServer;
  let allowedPage: { server: Server; origin: string };
  let otherPage: { server: Server; origin: string };
  let browser: BrowserContext;
  let closeBrowser: () => Promise<void>;

  before(async () => {
    allowedPage = await startPageServer();
    otherPage = await startPageServer();
    server = await startTestServer({ corsOrigins: [allowedPage.origin] });
    ({ browser, close: closeBrowser } = await launchChromium());
  });
  after(async () => {
    await closeBrowser();
    await server.close(0);
    allowedPage.server.close();
    otherPage.server.close();
  });

  /** Opens a page on `origin` and runs `call` in it (a self-contained function, sent as source). */
  async function inPage(origin: string, call: (args: Call) => Promise<Outcome>, args: Call): Promise<Outcome> {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(call, args);
    } finally {
      await page.close();
    }
  }

  it("lets an allowed origin call with the Connect protocol (JSON), errors and their details included", async () => {
    const getTool = `${server.httpUrl}/toolruntime.v1.RegistryService/GetTool`;
    const found = await inPage(allowedPage.origin, connectUnary, {
      label: "allowed",
      url: getTool,
      body: { name: "builtin.echo" },
    });
    expect(found.status, JSON.stringify(found)).to.equal(200);
    expect((found.json as { spec: { name: string } }).spec.name).to.equal("builtin.echo");

    const missing = await inPage(allowedPage.origin, connectUnary, {
      label: "allowed",
      url: getTool,
      body: { name: "no.such_tool" },
    });
    expect(missing.status).to.equal(404);
    const error = missing.json as { code: string; details: { type: string }[] };
    expect(error.code).to.equal("not_found");
    expect(error.details[0]?.type).to.equal("toolruntime.v1.ToolError");
  });

  it("lets an allowed origin call with gRPC-Web and read grpc-status and grpc-message", async () => {
    const getTool = `${server.httpUrl}/toolruntime.v1.RegistryService/GetTool`;
    const found = await inPage(allowedPage.origin, grpcWebUnary, {
      label: "allowed",
      url: getTool,
      body: { name: "builtin.echo" },
    });
    expect(found.status, JSON.stringify(found)).to.equal(200);
    expect(found.text).to.contain('message:{"spec":{"name":"builtin.echo"');
    expect(found.text).to.match(/trailer:grpc-status: ?0\r\n/);

    const missing = await inPage(allowedPage.origin, grpcWebUnary, {
      label: "allowed",
      url: getTool,
      body: { name: "no.such_tool" },
    });
    const status = missing.grpcStatus ?? /grpc-status: ?(\d+)/.exec(missing.text ?? "")?.[1];
    expect(status, JSON.stringify(missing)).to.equal("5");
  });

  it("blocks a page on an origin not in the list: the preflight gets no Access-Control-Allow-Origin", async () => {
    const getTool = `${server.httpUrl}/toolruntime.v1.RegistryService/GetTool`;
    const blocked = await inPage(otherPage.origin, connectUnary, {
      label: "other",
      url: getTool,
      body: { name: "builtin.echo" },
    });
    expect(blocked).to.deep.equal({ error: "other: TypeError: Failed to fetch" });

    const preflight = (origin: string): Promise<Response> =>
      fetch(getTool, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type,connect-protocol-version",
        },
      });
    const refused = await preflight(otherPage.origin);
    expect(refused.headers.get("access-control-allow-origin")).to.equal(null);
    const answered = await preflight(allowedPage.origin);
    expect(answered.status).to.equal(204);
    expect(answered.headers.get("access-control-allow-origin")).to.equal(allowedPage.origin);
    expect(answered.headers.get("access-control-allow-methods")).to.equal("POST, GET");
    expect(answered.headers.get("access-control-allow-headers")?.toLowerCase()).to.contain("connect-protocol-version");
  });

  it("exposes the headers Connect and gRPC-Web need to pages of an allowed origin", async () => {
    const response = await fetch(`${server.httpUrl}/toolruntime.v1.RegistryService/GetTool`, {
      method: "POST",
      headers: { origin: allowedPage.origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "builtin.echo" }),
    });
    expect(response.status).to.equal(200);
    expect(response.headers.get("vary")).to.equal("Origin");
    const exposed = (response.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(", ");
    expect(exposed).to.include.members([
      "grpc-status",
      "grpc-message",
      "grpc-status-details-bin",
      "connect-content-encoding",
      "connect-accept-encoding",
    ]);
  });
});
