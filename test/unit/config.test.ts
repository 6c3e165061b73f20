import { expect } from "chai";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { helpText, readConfig } from "../../src/config.js";

describe("readConfig()", () => {
  it("uses the documented defaults", () => {
    const config = readConfig([], {});
    expect(config).to.deep.include({
      host: "127.0.0.1",
      grpcPort: 50051,
      httpPort: 8080,
      builtinTools: true,
      identities: [],
    });
    expect(config.connection.maxMessageBytes).to.equal(4 * 1024 * 1024);
    expect(config.tls).to.equal(undefined);
  });

  it("lets flags win over the environment, and the environment over the config file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-config-"));
    const file = path.join(dir, "config.json");
    await writeFile(file, JSON.stringify({ grpcPort: 1111, httpPort: 2222, host: "127.0.0.2" }));
    const config = readConfig(["--config", file, "--grpc-port", "3333"], { TOOLRUNTIME_HTTP_PORT: "4444" });
    expect([config.grpcPort, config.httpPort, config.host]).to.deep.equal([3333, 4444, "127.0.0.2"]);
  });

  it("rejects an invalid config file with every problem named", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-config-"));
    const file = path.join(dir, "config.json");
    await writeFile(
      file,
      JSON.stringify({
        grpcPort: "x",
        colour: "blue",
        identities: [{ name: "ci", tokenSha256: ["abc"], grants: [{ actions: ["fly"], patterns: ["*"] }] }],
      }),
    );
    expect(() => readConfig(["--config", file], {}))
      .to.throw(Error)
      .that.satisfies((error: Error) =>
        [
          "/grpcPort must be integer",
          'must NOT have additional properties "colour"',
          "/identities/0/tokenSha256/0",
          "/identities/0/grants/0/actions/0",
        ].every((fragment) => error.message.includes(fragment)),
      );
  });

  it("rejects out-of-range values and half a TLS configuration precisely", () => {
    expect(() => readConfig(["--http-port", "70000"], {})).to.throw(
      '--http-port "70000" is invalid: use a whole number from 0 to 65535',
    );
    expect(() => readConfig(["--tls-cert", "a.pem"], {})).to.throw("--tls-cert and --tls-key go together");
    expect(() => readConfig([], { TOOLRUNTIME_LOG_INPUTS: "maybe" })).to.throw(
      'TOOLRUNTIME_LOG_INPUTS "maybe" is invalid',
    );
  });

  it("documents every flag with its environment variable and default in --help", () => {
    const help = helpText();
    for (const flag of [
      "--grpc-port",
      "--tls-client-ca",
      "--max-connection-age-ms",
      "--audit-log",
      "--otlp-endpoint",
      "--config",
    ]) {
      expect(help).to.contain(flag);
    }
    expect(help).to.contain("TOOLRUNTIME_GRPC_PORT");
    expect(help).to.contain("(default: 50051)");
  });

  it("reads MCP servers from repeated flags and the config file, and their trust by NAME", async () => {
    const config = readConfig(
      ["--mcp-server", "files=npx -y 'server fs' /srv", "--mcp-server", "docs=https://mcp.example.com/mcp"],
      { TOOLRUNTIME_MCP_TRUST_HINTS: "docs" },
    );
    expect(config.mcpServers).to.deep.equal([
      { kind: "stdio", name: "files", command: "npx", args: ["-y", "server fs", "/srv"] },
      { kind: "http", name: "docs", url: new URL("https://mcp.example.com/mcp") },
    ]);
    expect(config.mcpTrustHints).to.deep.equal(["docs"]);
    expect(config.mcpTrustIdempotent).to.deep.equal([]);
    expect(config.mcpPageSize).to.equal(100);
    const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-config-"));
    const file = path.join(dir, "config.json");
    await writeFile(file, JSON.stringify({ mcpServers: ["web=http://127.0.0.1:9000/mcp"], mcpPageSize: 5 }));
    const fromFile = readConfig(["--config", file], {});
    expect(fromFile.mcpServers.map((server) => server.name)).to.deep.equal(["web"]);
    expect(fromFile.mcpPageSize).to.equal(5);
  });

  it("refuses an invalid --mcp-server, a NAME given twice and trust for an unknown NAME", () => {
    expect(() => readConfig(["--mcp-server", "Bad Name=cmd"], {})).to.throw(
      '--mcp-server value "Bad Name=cmd" is invalid',
    );
    expect(() => readConfig(["--mcp-server", "a=x", "--mcp-server", "a=y"], {})).to.throw(
      'mcp server name "a" is given twice: give each --mcp-server a distinct NAME',
    );
    expect(() => readConfig(["--mcp-server", "a=x", "--mcp-trust-idempotent", "b"], {})).to.throw(
      '--mcp-trust-idempotent "b" names no --mcp-server: give the NAME of a configured MCP server',
    );
    expect(() => readConfig(["--mcp-page-size", "0"], {})).to.throw("--mcp-page-size");
  });

  it("reads --pack-specs-above, 1,000 by default, and refuses a negative figure", () => {
    expect(readConfig([], {}).packSpecsAbove).to.equal(1000);
    expect(readConfig(["--pack-specs-above", "0"], {}).packSpecsAbove).to.equal(0);
    expect(readConfig([], { TOOLRUNTIME_PACK_SPECS_ABOVE: "200000" }).packSpecsAbove).to.equal(200_000);
    expect(() => readConfig(["--pack-specs-above", "-1"], {})).to.throw("--pack-specs-above");
  });

  it("reads --max-specs-waiting-to-pack, 32,768 by default, and refuses less than 1", () => {
    expect(readConfig([], {}).maxSpecsWaitingToPack).to.equal(32_768);
    expect(readConfig(["--max-specs-waiting-to-pack", "1"], {}).maxSpecsWaitingToPack).to.equal(1);
    expect(readConfig([], { TOOLRUNTIME_MAX_SPECS_WAITING_TO_PACK: "50000" }).maxSpecsWaitingToPack).to.equal(50_000);
    expect(() => readConfig(["--max-specs-waiting-to-pack", "0"], {})).to.throw("--max-specs-waiting-to-pack");
  });

  it("reads --no-lull-collection: the lull's collections are on by default", () => {
    expect(readConfig([], {}).noLullCollection).to.equal(false);
    expect(readConfig(["--no-lull-collection"], {}).noLullCollection).to.equal(true);
    expect(readConfig([], { TOOLRUNTIME_NO_LULL_COLLECTION: "true" }).noLullCollection).to.equal(true);
  });
});
