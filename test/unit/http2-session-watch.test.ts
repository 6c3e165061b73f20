import { execFileSync } from "node:child_process";
import { expect } from "chai";

/**
 * Run in a child with --expose-gc: an HTTP/2 server whose sessions are watched (keepalive 60 s),
 * 20 clients that each make a request and go away (half closing, half destroying), then two full
 * collections. Prints how many of the server's sessions are still in memory.
 */
const sessionsLeft = `
const http2 = await import("node:http2");
const { watchHttp2Session } = await import(process.argv[1]);
const watch = process.argv[2] === "watch";
const sessions = [];
const server = http2.createServer();
server.on("session", (session) => {
  sessions.push(new WeakRef(session));
  if (watch) watchHttp2Session(session, { keepaliveTimeMs: 60000, keepaliveTimeoutMs: 20000, maxIdleMs: 0 });
  else session.setTimeout(60000);
});
server.on("stream", (stream) => {
  stream.respond({ ":status": 200 });
  stream.end();
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const { port } = server.address();
for (let index = 0; index < 20; index += 1) {
  const client = http2.connect("http://127.0.0.1:" + port);
  await new Promise((resolve) => {
    const request = client.request({ ":path": "/" });
    request.resume();
    request.on("close", resolve);
    request.end();
  });
  if (index % 2) client.close();
  else client.destroy();
}
// Until the server has seen every session close.
while (sessions.some((session) => session.deref() && !session.deref().destroyed)) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await new Promise((resolve) => setImmediate(resolve));
gc();
gc();
process.stdout.write(String(sessions.filter((session) => session.deref() !== undefined).length));
server.close();
process.exit(0);
`;

function sessionsInMemory(kind: "watch" | "plain"): number {
  const module = new URL("../../src/server/http2-session-watch.js", import.meta.url).href;
  const output = execFileSync(
    process.execPath,
    ["--expose-gc", "--input-type=module", "-e", sessionsLeft, module, kind],
    {
      encoding: "utf8",
    },
  );
  return Number(output);
}

describe("watchHttp2Session", () => {
  it("lets a closed session go at once, where Node's session timer alone keeps it for the timer's delay", () => {
    // Node 20 leaves a destroyed session's timer running: if this Node no longer does, this first
    // figure says so.
    expect(sessionsInMemory("plain")).to.equal(20);
    expect(sessionsInMemory("watch")).to.equal(0);
  });
});
