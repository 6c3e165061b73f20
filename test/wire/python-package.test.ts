// The Python provider library as someone outside the repository gets it: its folder
// (examples/python, with the generated stubs it ships) copied under os.tmpdir(), run there with
// Debian's interpreter and no protoc step, and installed with pip into a virtual environment from
// which a provider of one's own serves a tool. Both serve a real server over the wire.
import { expect } from "chai";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { python, repoRoot } from "../support/python-harness.js";
import { spawnUntil } from "../support/spawn-until.js";
import { startTestServer } from "../support/test-server.js";

const execFileAsync = promisify(execFile);

/** A provider of one's own, outside the library's folder, on the pip-installed library. */
const ownProvider = `import sys
import toolruntime_provider
from toolruntime_provider import Provider, tool

@tool("pyinstalled.upper", input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
def upper(inputs, context):
    return {"text": inputs["text"].upper(), "stubs": toolruntime_provider.load_stubs().provider_pb2.__file__}

provider = Provider(sys.argv[1], "pyinstalled", [upper])
provider.start()
if not provider.wait_connected(timeout=30):
    sys.exit(f"not welcomed: {provider.error}")
print("connected", flush=True)
provider.serve_forever()
`;

describe("The Python provider library outside the repository", function () {
  this.timeout(60_000);

  let work: string;
  let folder: string;
  let server: RunningServer;
  let client: ClientStack;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-package-"));
    folder = path.join(work, "toolruntime-provider");
    await cp(path.join(repoRoot, "examples/python"), folder, {
      recursive: true,
      filter: (source) => !source.includes("__pycache__"),
    });
    server = await startTestServer();
    client = createClientStack("grpc-js", server);
  });

  after(async () => {
    client?.close();
    await server?.close(0);
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** Runs a tool through RunTool and returns its output. */
  async function runTool(toolName: string, inputs: Record<string, string>): Promise<unknown> {
    let last;
    for await (const response of client.runner.runTool({ toolName, inputs })) last = response.event?.event;
    if (last?.case !== "completed") throw new Error(`the run of ${toolName} ended without completed: ${last?.case}`);
    expect(last.value.result?.success, JSON.stringify(last.value.result?.error)).to.equal(true);
    return last.value.result?.output;
  }

  it("runs from its own folder with the stubs it ships: no protoc, no stubs directory", async () => {
    // -I: isolated mode, nothing from PYTHONPATH or the user's site-packages.
    const provider = await spawnUntil(
      python,
      ["-I", "-B", "provider_example.py", server.grpcAddress],
      folder,
      "connected",
    );
    try {
      expect(await runTool("pyexample.word_count", { text: "to be or not to be" })).to.deep.equal({
        words: 6,
        chunks: 2,
      });
    } finally {
      expect(await provider.stop(), provider.output()).to.equal(0);
    }
  });

  it("installs with pip into a virtual environment and serves a provider of one's own from elsewhere", async () => {
    const venv = path.join(work, "venv");
    await execFileAsync(python, ["-m", "venv", "--system-site-packages", "--without-pip", venv]);
    // Offline: a pure package whose build backend (setuptools) and dependencies (grpcio,
    // protobuf) are Debian's.
    await execFileAsync(python, [
      ...["-m", "pip", "--python", path.join(venv, "bin/python")],
      ...["install", "--quiet", "--no-build-isolation", "--no-index", folder],
    ]);
    const elsewhere = path.join(work, "my-provider");
    await mkdir(elsewhere);
    await writeFile(path.join(elsewhere, "main.py"), ownProvider);
    const provider = await spawnUntil(
      path.join(venv, "bin/python"),
      ["-I", "-B", "main.py", server.grpcAddress],
      elsewhere,
      "connected",
    );
    try {
      const output = (await runTool("pyinstalled.upper", { text: "abc" })) as { text: string; stubs: string };
      expect(output.text).to.equal("ABC");
      expect(output.stubs.startsWith(`${venv}/lib/`), output.stubs).to.equal(true);
      expect(output.stubs).to.match(/\/site-packages\/toolruntime\/v1\/provider_pb2\.py$/);
    } finally {
      // This provider has no signal handler: SIGTERM ends it.
      await provider.stop();
    }
  });
});
