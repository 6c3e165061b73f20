import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { startMainProcess } from "../support/main-process.js";

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
