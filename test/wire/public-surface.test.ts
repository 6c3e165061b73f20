import { expect } from "chai";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createClientStack } from "../support/client-stacks.js";
import { uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

const run = promisify(execFile);
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const token = (name: string): string[] => [sha256(`${name}-token`)];
const identities: IdentityConfig[] = [
  { name: "ci", tokenSha256: token("ci"), grants: [{ actions: ["read", "execute"], patterns: ["builtin.*"] }] },
  { name: "team-admin", tokenSha256: token("team-admin"), grants: [{ actions: ["admin"], patterns: ["team.*"] }] },
  { name: "scraper", tokenSha256: token("scraper"), grants: [{ actions: ["metrics.read"], patterns: ["*"] }] },
  { name: "root", tokenSha256: token("root"), grants: [{ actions: ["admin"], patterns: ["*"] }] },
];

describe("/metrics under authentication", () => {
  let server: RunningServer;
  const secret = `secret.${uniqueName("tool")}`;
  before(async () => {
    server = await startTestServer({ identities });
    const client = createClientStack("grpc-js", server);
    try {
      await client.registry.registerTool(
        { spec: { name: secret } },
        { headers: { authorization: "Bearer root-token" } },
      );
      await client.runner.activateTool(
        { toolName: "builtin.echo" },
        { headers: { authorization: "Bearer root-token" } },
      );
      await client.runner.executeTool(
        { toolName: "builtin.echo", inputs: {} },
        { headers: { authorization: "Bearer root-token" } },
      );
    } finally {
      client.close();
    }
  });
  after(async () => {
    await server.close(0);
  });

  const scrape = async (who?: string) => {
    const response = await fetch(`${server.httpUrl}/metrics`, {
      headers: who === undefined ? {} : { authorization: `Bearer ${who}-token` },
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  it("answers 401 with a Bearer challenge and no metrics to a scrape without credentials", async () => {
    const response = await scrape();
    expect(response.status).to.equal(401);
    expect(response.headers.get("www-authenticate")).to.equal('Bearer realm="toolruntime metrics"');
    expect(response.text).to.equal(
      'the call carries no credentials: send "authorization: Bearer <token>" or a client certificate\n',
    );
  });

  it("answers 401 to an unknown token", async () => {
    const response = await scrape("guess");
    expect(response.status).to.equal(401);
    expect(response.text).to.contain("not recognised");
  });

  it("answers 403 to an identity without metrics.read on every tool, even an admin of one namespace", async () => {
    for (const who of ["ci", "team-admin"]) {
      const response = await scrape(who);
      expect(response.status, who).to.equal(403);
      expect(response.text).to.equal(
        `identity "${who}" may not read metrics: grant it "metrics.read" on the pattern "*"\n`,
      );
      expect(response.text).to.not.contain(secret);
    }
  });

  it("serves the metrics to metrics.read and to admin", async () => {
    for (const who of ["scraper", "root"]) {
      const response = await scrape(who);
      expect(response.status, who).to.equal(200);
      expect(response.text).to.contain('toolruntime_executions_total{tool="builtin.echo",outcome="success"} 1');
    }
  });

  it("keeps /healthz and /readyz open without credentials", async () => {
    expect((await fetch(`${server.httpUrl}/healthz`)).status).to.equal(200);
    expect((await fetch(`${server.httpUrl}/readyz`)).status).to.equal(200);
  });
});

describe("Reflection and the README", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close(0);
  });

  it("lists exactly the services the README says it lists", async () => {
    const readme = await readFile(new URL("../../../README.md", import.meta.url), "utf8");
    const sentence = /Server reflection \(v1 and v1alpha\) lists and describes (.+?), so `buf curl`/.exec(
      readme.replace(/\s+/g, " "),
    );
    expect(sentence, "the README's reflection sentence").to.not.equal(null);
    const documented = [...(sentence?.[1] ?? "").matchAll(/`(?:toolruntime\.v1\.)?(\w+Service)`/g)].map(
      (match) => `toolruntime.v1.${match[1]}`,
    );
    const { stdout } = await run("npx", [
      "--no-install",
      "buf",
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--list-services",
      `http://${server.grpcAddress}`,
    ]);
    const served = stdout.split("\n").filter((line) => line.startsWith("toolruntime."));
    expect(documented.sort()).to.deep.equal(served.sort());
  });
});
