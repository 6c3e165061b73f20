import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { startMainProcess } from "../support/main-process.js";

/** Runs the server command with `args` until it exits: its exit code and stderr. */
async function runToExit(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["dist/src/main.js", "--grpc-port", "0", "--http-port", "0", ...args]);
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  // A server that started would not exit by itself: end it, and the test fails on the code.
  child.stdout.on("data", (chunk: Buffer) => {
    if (chunk.toString().includes("gRPC:")) child.kill("SIGTERM");
  });
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr };
}

describe("The toolruntime command", () => {
  it("serves the built-in tools and a --tools module, and exits 0 on SIGTERM", async () => {
    const { child, httpUrl, output, exited } = await startMainProcess(["--tools", "examples/tools/greeting-tools.js"]);
    try {
      expect(output()).to.match(/gRPC: +127\.0\.0\.1:\d+/);
      expect(output()).to.contain("builtin.echo");
      expect(output()).to.contain("examples.greet");
      const runner = createClient(RunnerService, createConnectTransport({ baseUrl: httpUrl, httpVersion: "1.1" }));
      const events = [];
      for await (const response of runner.runTool({ toolName: "examples.greet", inputs: { name: "Ada" } }))
        events.push(response.event);
      const last = events.at(-1)?.event;
      expect(last?.case === "completed" && last.value.result?.output).to.deep.equal({ greeting: "Hello, Ada!" });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).to.equal(0);
  });

  it("refuses an invalid flag value with a precise message and exit code 2", async () => {
    const child = spawn(process.execPath, ["dist/src/main.js", "--grpc-port", "99999"]);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).to.equal(2);
    expect(stderr).to.contain('--grpc-port "99999" is invalid: use a whole number from 0 to 65535');
  });

  describe("with two tools of one name", () => {
    let folder: string;
    const tool = (name: string, result: string) => `{ name: "${name}", handler: () => ({ by: "${result}" }) }`;

    before(async () => {
      folder = await mkdtemp(path.join(os.tmpdir(), "toolruntime-duplicate-tools-"));
      await writeFile(
        path.join(folder, "twice.js"),
        `export const first = ${tool("dup.tool", "first")};\nexport const second = ${tool("dup.tool", "second")};\n`,
      );
      await writeFile(path.join(folder, "listed.js"), `export const tools = [${tool("dup.tool", "listed")}];\n`);
      await writeFile(path.join(folder, "single.js"), `export const mine = ${tool("dup.tool", "single")};\n`);
      await writeFile(path.join(folder, "echo.js"), `export const echo = ${tool("builtin.echo", "mine")};\n`);
      // One object exported alone and in an array is one tool, not two.
      await writeFile(
        path.join(folder, "reexported.js"),
        `export const greet = ${tool("same.greet", "greet")};\nexport const all = [greet];\n`,
      );
    });
    after(async () => {
      if (folder) await rm(folder, { recursive: true, force: true });
    });

    it("names both exports of one module and exits 1", async () => {
      const modulePath = path.join(folder, "twice.js");
      const { code, stderr } = await runToExit(["--tools", modulePath]);
      expect(code).to.equal(1);
      expect(stderr).to.contain(
        `toolruntime: tool "dup.tool" is defined twice, by module "${modulePath}" (export "first") and by module "${modulePath}" (export "second"): rename one of them, or export it once`,
      );
    });

    it("names each module and export across modules, an item of an exported array by its index", async () => {
      const listed = path.join(folder, "listed.js");
      const single = path.join(folder, "single.js");
      const { code, stderr } = await runToExit(["--tools", listed, "--tools", single]);
      expect(code).to.equal(1);
      expect(stderr).to.contain(
        `toolruntime: tool "dup.tool" is defined twice, by module "${listed}" (export "tools[0]") and by module "${single}" (export "mine")`,
      );
    });

    it("names the built-in tools when a module's tool takes one of their names", async () => {
      const echo = path.join(folder, "echo.js");
      const { code, stderr } = await runToExit(["--tools", echo]);
      expect(code).to.equal(1);
      expect(stderr).to.contain(
        `toolruntime: tool "builtin.echo" is defined twice, by the built-in tools (leave them out with --no-builtin-tools) and by module "${echo}" (export "echo")`,
      );
    });

    it("counts one object exported twice as one tool", async () => {
      const { child, httpUrl, exited } = await startMainProcess(["--tools", path.join(folder, "reexported.js")]);
      try {
        const runner = createClient(RunnerService, createConnectTransport({ baseUrl: httpUrl, httpVersion: "1.1" }));
        let last;
        for await (const response of runner.runTool({ toolName: "same.greet", inputs: {} }))
          last = response.event?.event;
        expect(last?.case === "completed" && last.value.result?.output).to.deep.equal({ by: "greet" });
      } finally {
        child.kill("SIGTERM");
      }
      expect(await exited).to.equal(0);
    });
  });

  it("says at info level, once per failure streak and without a stack, why an --mcp-server child could not start", async () => {
    const failing = `bad=node -e "console.error('boom: missing API key'); process.exit(3)"`;
    const { child, output } = await startMainProcess(["--log-level", "info", "--mcp-server", failing]);
    try {
      // The third warning of the streak is its third failure: by then the first two lines are complete.
      await new Promise<void>((resolve) => {
        const check = (): void => void (output().includes("after 3 attempts") && resolve());
        child.stdout.on("data", check);
        check();
      });
    } finally {
      child.kill("SIGTERM");
    }
    const lines = output().split("\n");
    const first = lines.filter((line) => line.includes("boom: missing API key"));
    expect(first).to.have.length(1);
    const record = JSON.parse(first[0] ?? "") as { msg: string };
    expect(record).to.deep.include({ level: 40, mcpServer: "bad", exitCode: 3, stderr: "boom: missing API key" });
    expect(record.msg).to.match(
      /^MCP server "bad" could not start: exited with code 3; its stderr ends with "boom: missing API key"; trying again in \d+ ms$/,
    );
    expect(lines.filter((line) => line.includes("after 2 attempts (exited with code 3)"))).to.have.length(1);
    expect(output()).not.to.contain("    at ");
  });

  it("names a tool module that exports no tool", async () => {
    const child = spawn(process.execPath, [
      "dist/src/main.js",
      "--grpc-port",
      "0",
      "--http-port",
      "0",
      "--tools",
      "package.json",
    ]);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).to.equal(1);
    expect(stderr).to.contain('tool module "package.json"');
  });
});
