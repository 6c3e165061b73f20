import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";

/** Starts `node dist/src/main.js` with `args` and resolves once it printed both addresses. */
async function startMain(
  args: string[],
): Promise<{ child: ChildProcessWithoutNullStreams; httpUrl: string; output: () => string }> {
  const child = spawn(process.execPath, [
    "dist/src/main.js",
    "--grpc-port",
    "0",
    "--http-port",
    "0",
    "--log-level",
    "warn",
    ...args,
  ]);
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const httpUrl = await new Promise<string>((resolve, reject) => {
    const onData = (): void => {
      const match = /Connect\/gRPC-Web: (http:\/\/\S+)/.exec(output);
      if (match?.[1] && output.includes("tools:")) resolve(match[1]);
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) => reject(new Error(`exited with ${code}: ${output}`)));
  });
  return { child, httpUrl, output: () => output };
}

describe("The toolruntime command", () => {
  it("serves the built-in tools and a --tools module, and exits 0 on SIGTERM", async () => {
    const { child, httpUrl, output } = await startMain(["--tools", "examples/tools/greeting-tools.js"]);
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
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).to.equal(0);
  });

  it("refuses an invalid flag value with a precise message and exit code 2", async () => {
    const child = spawn(process.execPath, ["dist/src/main.js", "--grpc-port", "99999"]);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).to.equal(2);
    expect(stderr).to.contain('--grpc-port "99999" is invalid: use a whole number from 0 to 65535');
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
