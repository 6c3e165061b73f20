// `/` on the HTTP port leads to the web console: a browser pointed at the port lands on the page.
import { expect } from "chai";
import http2 from "node:http2";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";

/** One request over cleartext HTTP/2 (prior knowledge): its status and headers. */
function requestHttp2(origin: string, path: string): Promise<http2.IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(origin);
    session.on("error", reject);
    const stream = session.request({ ":path": path });
    stream.on("response", (headers) => {
      stream.resume();
      stream.on("end", () => {
        session.close();
        resolve(headers);
      });
    });
    stream.on("error", reject);
  });
}

describe("The HTTP port's root", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close(0);
  });

  it("redirects GET / to /console/ with a 302, and a browser following it gets the console's page", async () => {
    const response = await fetch(`${server.httpUrl}/`, { redirect: "manual" });
    expect(response.status).to.equal(302);
    expect(response.headers.get("location")).to.equal("/console/");
    expect(await response.text()).to.equal("see /console/\n");

    const followed = await fetch(`${server.httpUrl}/`);
    expect(followed.url).to.equal(`${server.httpUrl}/console/`);
    expect(followed.status).to.equal(200);
    expect(followed.headers.get("content-type")).to.equal("text/html; charset=utf-8");
  });

  it("redirects HEAD / and GET /?query the same way, and over HTTP/2 too", async () => {
    const head = await fetch(`${server.httpUrl}/`, { method: "HEAD", redirect: "manual" });
    expect(head.status).to.equal(302);
    expect(head.headers.get("location")).to.equal("/console/");
    expect(await head.text()).to.equal("");
    const query = await fetch(`${server.httpUrl}/?from=bookmark`, { redirect: "manual" });
    expect(query.status).to.equal(302);
    expect(query.headers.get("location")).to.equal("/console/");
    const overHttp2 = await requestHttp2(server.httpUrl, "/");
    expect(overHttp2[":status"]).to.equal(302);
    expect(overHttp2.location).to.equal("/console/");
  });

  it("leaves other methods on / and other paths to the RPC handler", async () => {
    const post = await fetch(`${server.httpUrl}/`, { method: "POST", redirect: "manual" });
    expect(post.status).to.equal(404);
    const other = await fetch(`${server.httpUrl}/index.html`, { redirect: "manual" });
    expect(other.status).to.equal(404);
  });
});
