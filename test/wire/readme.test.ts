import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";

const run = promisify(execFile);

/** The README's shell blocks that call the server, in order. */
async function readmeShellBlocks(): Promise<string[]> {
  const readme = await readFile("README.md", "utf8");
  return [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((match) => match[1] ?? "")
    .filter((block) => block.includes("curl"));
}

describe("The README's examples", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close(0);
  });

  /** Runs a README block against the test server's ports, in bash unless `shell` is "sh". */
  async function runBlock(block: string, shell: "bash" | "sh" = "bash"): Promise<string> {
    const httpPort = new URL(server.httpUrl).port;
    const grpcPort = server.grpcAddress.split(":").at(-1) ?? "";
    const script = block
      .replaceAll("127.0.0.1:8080", `127.0.0.1:${httpPort}`)
      .replaceAll("127.0.0.1:50051", `127.0.0.1:${grpcPort}`);
    const flags = shell === "sh" ? ["-eu", "-c", script] : ["-euo", "pipefail", "-c", script];
    const { stdout } = await run(shell, flags, { timeout: 30_000 });
    return stdout;
  }

  it("work as printed: listing, the four stages, the stream, the error, buf curl, a detached run and reflection", async () => {
    const blocks = await readmeShellBlocks();
    expect(blocks).to.have.length(7);
    const [list, stages, stream, error, bufCurl, detached, reflection] = await Promise.all(
      // The streaming recipe promises any POSIX shell: run it in sh (dash on Debian).
      blocks.map((block, index) => runBlock(block, index === 2 ? "sh" : "bash")),
    );
    expect((JSON.parse(list ?? "") as { tools: unknown[] }).tools).to.have.length(2);
    expect(stages).to.contain('"output":{"echo":{"hello":"world"}}');
    expect(stages).to.contain('"wasActive":true');
    expect(stream).to.contain('"completed":{"result":{"success":true,"output":{"counted":3}');
    expect(error).to.contain('"code":"not_found"');
    expect(error).to.contain('"errorType":"ActivationError"');
    expect(bufCurl).to.contain('"completed"');
    expect(bufCurl).to.contain('"counted": 3');
    expect(reflection).to.contain("toolruntime.v1.RunnerService/RunTool");
    expect(reflection).to.contain("grpc.health.v1.Health/Check");
    expect(reflection).to.match(/"status": "SERVING"/);
    expect(detached).to.not.contain('"sequence": "1"');
    expect(detached).to.contain('"sequence": "3"');
    expect(detached).to.contain('"counted": 3');
  });

  it("Python tour: stubs in a directory of their own, the stream, and the ToolError read from the trailer", async () => {
    const readme = await readFile("README.md", "utf8");
    const setup = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((match) => match[1] ?? "")
      .find((block) => block.includes("grpc_tools.protoc"));
    const tour = /```python\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(setup).to.be.a("string");
    expect(tour).to.be.a("string");
    const directory = await mkdtemp(join(tmpdir(), "toolruntime-readme-python-"));
    try {
      const script = join(directory, "tour.py");
      await writeFile(script, (tour ?? "").replaceAll("127.0.0.1:50051", server.grpcAddress));
      const before = (await run("git", ["status", "--porcelain", "--untracked-files=all"])).stdout;
      const output = await runBlock((setup ?? "").replace("tour.py", script));
      expect(output.split("\n")[0]).to.equal("1 discovered");
      expect(output).to.contain(" completed\n");
      expect(output).to.contain("NOT_FOUND ActivationError no.such_tool\n");
      expect((await run("git", ["status", "--porcelain", "--untracked-files=all"])).stdout).to.equal(before);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("stream a body of 256 bytes or more in sh: the length prefix takes four bytes, counted in bytes", async () => {
    const stream = (await readmeShellBlocks())[2] ?? "";
    expect(stream).to.match(/^body='.*'$/m);
    const text = `${"é".repeat(150)}${"x".repeat(100)}`;
    const body = JSON.stringify({ toolName: "builtin.echo", inputs: { text } });
    expect(Buffer.byteLength(body)).to.be.greaterThan(256);
    const output = await runBlock(stream.replace(/^body='.*'$/m, `body='${body}'`), "sh");
    expect(output).to.contain(`"completed":{"result":{"success":true,"output":{"echo":{"text":"`);
    const echoed = /"output":\{"echo":\{"text":"([^"]*)"/.exec(output)?.[1] ?? "";
    expect(echoed.replaceAll("\n", "")).to.have.length(100);
  });
});
