// The Python provider (examples/python) keeps its stream whatever a handler logs or returns, and
// moves when its server shuts down: a real server process, the fixture provider as a child process.
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { collect } from "../support/expect-error.js";
import { startMainProcess, type MainProcess } from "../support/main-process.js";
import { generatePythonStubs, python, repoRoot } from "../support/python-harness.js";
import { PythonProviderProcess } from "../support/python-provider-process.js";

const fixture = path.join(repoRoot, "test/python/provider_fixture.py");

describe("A Python provider's limits and moves", function () {
  this.timeout(40_000);
  let server: MainProcess;
  let stubsDir: string;
  let provider: PythonProviderProcess;

  before(async () => {
    stubsDir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-moves-"));
    await generatePythonStubs(stubsDir);
    server = await startMainProcess(["--shutdown-grace-ms", "10000"]);
    provider = new PythonProviderProcess(python, [fixture, stubsDir, server.grpcAddress], repoRoot);
    await provider.waitFor("connected");
  });
  after(async () => {
    provider.kill();
    server.child.kill("SIGKILL");
    await provider.exited;
    await rm(stubsDir, { recursive: true, force: true });
  });

  it("cuts or refuses what is larger than a message, keeping its stream", async () => {
    const runner = createClient(RunnerService, createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` }));
    const resultOf = async (toolName: string): Promise<ToolResult | undefined> => {
      const events = (await collect(runner.runTool({ toolName }))).map((response) => response.event as RunEvent);
      const last = events.at(-1)?.event;
      return last?.case === "completed" ? last.value.result : undefined;
    };
    const loud = await resultOf("pyfix.loud");
    expect(loud?.success, loud?.error?.details).to.equal(true);
    expect(loud?.output?.["chunk"]).to.match(/^output chunk is larger than the limit of 1048576 bytes/);
    const big = await resultOf("pyfix.big");
    expect(big?.error?.errorType).to.equal("OutputValidationError");
    expect(big?.error?.details).to.match(
      /^handler of "pyfix\.big" returned invalid output: output is larger than the limit of 4128768 bytes once encoded as protobuf \(\d+ bytes\)$/,
    );
    const upper = await resultOf("pyfix.upper");
    expect(upper?.success).to.equal(true);
    // Welcomed once: the stream never broke.
    expect(provider.stdout.split("\n").filter((line) => line === "connected")).to.have.length(1);
  });

  it("is told to move on shutdown, so that the idle server exits in well under a second", async () => {
    const signalledAt = performance.now();
    server.child.kill("SIGTERM");
    await provider.waitFor("draining: the server is shutting down");
    expect(await server.exited).to.equal(0);
    expect(performance.now() - signalledAt).to.be.below(1000);
  });
});
