import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveConsoleAsset } from "../../src/server/console-assets.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createTestPki, type TestPki } from "../support/certificates.js";
import { startTestServer } from "../support/test-server.js";

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One HTTP/1.1 request over TLS, trusting `ca`. */
function getHttps(url: string, ca: Buffer, method = "GET"): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = https.request(url, { ca, method }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

/** One HTTP/2 request over TLS, trusting `ca`. */
function getHttp2(origin: string, path: string, ca: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(origin, { ca });
    session.on("error", reject);
    const stream = session.request({ ":path": path });
    let headers: http2.IncomingHttpHeaders = {};
    let body = "";
    stream.setEncoding("utf8");
    stream.on("response", (received) => (headers = received));
    stream.on("data", (chunk: string) => (body += chunk));
    stream.on("end", () => {
      session.close();
      resolve({ status: Number(headers[":status"]), headers, body });
    });
    stream.on("error", reject);
  });
}

describe("Console assets", () => {
  describe("on a TLS port", () => {
    let pki: TestPki;
    let server: RunningServer;

    before(async () => {
      pki = await createTestPki();
      server = await startTestServer({ tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile } });
    });
    after(async () => {
      await server.close(0);
      await rm(pki.dir, { recursive: true, force: true });
    });

    it("serves the page behind the port's certificate, to HTTP/1.1 and HTTP/2 clients", async () => {
      expect(server.httpUrl).to.match(/^https:/);
      const overHttp1 = await getHttps(`${server.httpUrl}/console/`, pki.ca);
      expect(overHttp1.status).to.equal(200);
      expect(overHttp1.headers["content-type"]).to.equal("text/html; charset=utf-8");
      expect(overHttp1.body).to.contain("<title>toolruntime console</title>");
      const overHttp2 = await getHttp2(server.httpUrl, "/console/style.css", pki.ca);
      expect(overHttp2.status).to.equal(200);
      expect(overHttp2.headers["content-type"]).to.equal("text/css; charset=utf-8");
      expect(overHttp2.headers["x-content-type-options"]).to.equal("nosniff");
    });

    it("answers HEAD with the headers and no body", async () => {
      const answer = await getHttps(`${server.httpUrl}/console/app.js`, pki.ca, "HEAD");
      expect(answer.status).to.equal(200);
      expect(Number(answer.headers["content-length"])).to.be.above(10_000);
      expect(answer.body).to.equal("");
    });
  });

  describe("serveConsoleAsset()", () => {
    let emptyDirectory: string;
    let server: http.Server;
    let origin: string;

    before(async () => {
      emptyDirectory = `${await mkdtemp(join(tmpdir(), "toolruntime-console-"))}/`;
      server = http.createServer((request, response) => {
        if (serveConsoleAsset(request, response, emptyDirectory)) return;
        response.writeHead(418).end("not the console\n");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(async () => {
      await new Promise((resolve) => server.close(resolve));
      await rm(emptyDirectory, { recursive: true, force: true });
    });

    it("says to build when the console was not built", async () => {
      const response = await fetch(`${origin}/console/`);
      expect(response.status).to.equal(404);
      expect(await response.text()).to.equal("the console was not built: run npm run build\n");
    });

    it("answers 404 for a file it does not serve, and leaves every other path to the caller", async () => {
      const unknown = await fetch(`${origin}/console/index.js`);
      expect(unknown.status).to.equal(404);
      expect(await unknown.text()).to.equal("not found\n");
      const other = await fetch(`${origin}/consoles`);
      expect(other.status).to.equal(418);
      const rpc = await fetch(`${origin}/toolruntime.v1.RegistryService/ListTools`, { method: "POST" });
      expect(rpc.status).to.equal(418);
    });
  });
});
