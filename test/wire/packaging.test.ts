// The npm packages as someone outside the repository gets them: one `npm pack` of toolruntime and
// toolruntime-provider, each installed into an empty folder under os.tmpdir(). There, a tool
// module in TypeScript (compiled with tsc against the installed declarations) and one in
// JavaScript are served by the installed `toolruntime` command with --tools, and providers in
// TypeScript — one on toolruntime-provider alone, one on `toolruntime/provider` — serve tools to
// that server over the wire. The contract's .proto files it ships compile on their own (buf build,
// and Python stubs with which a client calls that server and decodes a failed call's details).
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { serverNodeFlags } from "../../src/server-node-flags.js";
import { startMainProcess, type MainProcess } from "../support/main-process.js";
import { python } from "../support/python-harness.js";
import { spawnUntil } from "../support/spawn-until.js";

const execFileAsync = promisify(execFile);

/** The repository root: npm test and mocha run from it. */
const repoRoot = process.cwd();

/** What `npm pack --json` reports of one package. */
interface PackedPackage {
  readonly name: string;
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

/**
 * Paths in a tarball: the manifest, the README, compiled JavaScript with its declarations, the
 * web console's built page, script and styles, and the contract's .proto files.
 */
const shippedFile =
  /^(package\.json|README\.md|dist\/(src|gen)\/[\w/.-]+\.(js|d\.ts)|dist\/console\/(index\.html|app\.js|style\.css)|proto\/[\w/.-]+\.proto)$/;

/** A client of one's own in Python, on stubs generated from the installed .proto files only. */
const pythonClient = `import sys
import grpc
from google.rpc import status_pb2
from toolruntime.v1 import runner_pb2, runner_pb2_grpc, tool_pb2

runner = runner_pb2_grpc.RunnerServiceStub(grpc.insecure_channel(sys.argv[1]))
try:
    runner.ActivateTool(runner_pb2.ActivateToolRequest(tool_name="no.such_tool"))
except grpc.RpcError as error:
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    tool_error = tool_pb2.ToolError()
    status.details[0].Unpack(tool_error)
    print(error.code().name, status.code, tool_error.error_type, tool_error.tool_name)
`;

/** Server code, which the provider SDK must not contain (nor load). */
const serverCode =
  /^dist\/src\/(server|executions|telemetry|auth|cli|stores)\/|^dist\/src\/(main|config|runtime|load-tools|index)\.|provider-hub/;

/** Packages only the server needs. */
const serverDependencies = ["@grpc/grpc-js", "@grpc/reflection", "grpc-health-check", "pino", "prom-client"];

/** The environment of a nested npm: without the npm_* settings of the `npm test` running this. */
function npmEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")));
}

async function npm(args: readonly string[], cwd: string): Promise<string> {
  const { stdout } = await execFileAsync("npm", args, { cwd, env: npmEnvironment(), maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** Installs `tarball` into `folder` as an author would, from the npm cache where it can. */
async function installInto(folder: string, tarball: string): Promise<void> {
  await npm(["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], folder);
}

/** Compiles the TypeScript project in `folder` with the repository's tsc. */
async function compile(folder: string): Promise<void> {
  const tsc = path.join(repoRoot, "node_modules/typescript/bin/tsc");
  try {
    await execFileAsync(process.execPath, [tsc, "-p", folder]);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`tsc failed in ${folder}:\n${stdout ?? ""}${stderr ?? ""}`, { cause: error });
  }
}

/** Bytes of the files under `directory`: `du --bytes` (apparent sizes). */
async function sizeOf(directory: string): Promise<number> {
  const { stdout } = await execFileAsync("du", ["-s", "--bytes", directory]);
  return Number(stdout.split("\t")[0]);
}

/** The packages installed in a folder's node_modules, by name. */
async function installedPackages(folder: string): Promise<string[]> {
  const modules = path.join(folder, "node_modules");
  const names: string[] = [];
  for (const entry of await readdir(modules)) {
    if (entry.startsWith(".")) continue;
    if (entry.startsWith("@"))
      names.push(...(await readdir(path.join(modules, entry))).map((name) => `${entry}/${name}`));
    else names.push(entry);
  }
  return names.sort();
}

/** A TypeScript project of an author: strict, NodeNext, and the installed declarations checked too. */
function authorTsconfig(): string {
  return JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      skipLibCheck: false,
      rootDir: "src",
      outDir: "dist",
      // An author installs @types/node; here the repository's copy stands in for it.
      types: ["node"],
      typeRoots: [path.join(repoRoot, "node_modules/@types")],
    },
    include: ["src"],
  });
}

const packageJson = (name: string): string => JSON.stringify({ name, private: true, type: "module" });

const shoutModule = `import { defineTool, type ToolContext, type ToolDefinitionInit } from "toolruntime";

export const shout = defineTool({
  name: "authored.shout",
  description: "Upper-cases inputs.text.",
  capabilities: { readOnly: true },
  inputSchema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
  handler: (inputs, context: ToolContext) => {
    context.reportProgress({ fraction: 1, message: "shouted" });
    return { text: String(inputs.text).toUpperCase(), tool: context.toolName };
  },
});

// The declarations are precise: a misspelt key does not compile.
// @ts-expect-error "readonly" is not a capability flag ("readOnly" is)
export const misspelt: ToolDefinitionInit["capabilities"] = { readonly: true };
`;

const greetModule = `import { defineTool } from "toolruntime";

export const greet = defineTool({
  name: "authored.greet",
  inputSchema: { type: "object", required: ["name"], properties: { name: { type: "string" } } },
  handler: ({ name }) => ({ greeting: \`Hello, \${name}!\` }),
});

export const plain = { name: "authored.plain", handler: () => ({ plain: true }) };
`;

/** A provider serving one tool; `from` is the package it imports createProvider from. */
const providerModule = (
  from: string,
  providerName: string,
) => `import { createProvider, defineTool, type Provider } from "${from}";

const provider: Provider = createProvider({
  address: process.argv[2] ?? "127.0.0.1:50051",
  providerName: "${providerName}",
  tools: [
    defineTool({
      name: "${providerName}.reverse",
      inputSchema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
      handler: ({ text }, { log }) => {
        log("info", "reversing");
        return { reversed: String(text).split("").reverse().join(""), by: "${providerName}" };
      },
    }),
  ],
});
await provider.connected;
console.log("connected");
process.on("SIGTERM", () => provider.close());
await provider.closed;
`;

describe("The packages installed outside the repository", function () {
  // One npm pack (which builds the provider package) and two npm installs from the cache.
  this.timeout(120_000);

  let work: string;
  let serverPackage: PackedPackage;
  let providerPackage: PackedPackage;
  let toolsFolder: string;
  let providerFolder: string;
  let server: MainProcess;

  before(async function () {
    this.timeout(300_000);
    work = await mkdtemp(path.join(os.tmpdir(), "toolruntime-packaging-"));
    const packed = JSON.parse(
      await npm(
        ["pack", repoRoot, path.join(repoRoot, "packages/provider"), "--pack-destination", work, "--json"],
        work,
      ),
    ) as PackedPackage[];
    const find = (name: string): PackedPackage => {
      const found = packed.find((item) => item.name === name);
      if (!found) throw new Error(`npm pack made no ${name} package: ${JSON.stringify(packed.map((p) => p.name))}`);
      return found;
    };
    serverPackage = find("toolruntime");
    providerPackage = find("toolruntime-provider");

    toolsFolder = path.join(work, "my-tools");
    providerFolder = path.join(work, "my-provider");
    for (const [folder, name] of [
      [toolsFolder, "my-tools"],
      [providerFolder, "my-provider"],
    ] as const) {
      await mkdir(path.join(folder, "src"), { recursive: true });
      await writeFile(path.join(folder, "package.json"), packageJson(name));
      await writeFile(path.join(folder, "tsconfig.json"), authorTsconfig());
    }
    await writeFile(path.join(toolsFolder, "src/shout.ts"), shoutModule);
    await writeFile(path.join(toolsFolder, "src/relay.ts"), providerModule("toolruntime/provider", "relay"));
    await writeFile(path.join(toolsFolder, "greet.js"), greetModule);
    await writeFile(path.join(providerFolder, "src/main.ts"), providerModule("toolruntime-provider", "solo"));

    await Promise.all([
      installInto(toolsFolder, path.join(work, serverPackage.filename)),
      installInto(providerFolder, path.join(work, providerPackage.filename)),
    ]);
    await Promise.all([compile(toolsFolder), compile(providerFolder)]);
    // The installed command, run where the author's modules are.
    server = await startMainProcess(["--tools", "dist/shout.js", "--tools", "greet.js"], {
      command: [path.join(toolsFolder, "node_modules/.bin/toolruntime")],
      cwd: toolsFolder,
    });
  });

  after(async () => {
    if (server) {
      server.child.kill("SIGTERM");
      expect(await server.exited, server.output()).to.equal(0);
    }
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("ship compiled JavaScript, declarations and .proto files only: no tests, benches, sources or source maps", () => {
    for (const item of [serverPackage, providerPackage]) {
      const paths = item.files.map((file) => file.path);
      expect(
        paths.filter((file) => !shippedFile.test(file)),
        `files of ${item.name}`,
      ).to.deep.equal([]);
    }
    expect(serverPackage.files.map((file) => file.path)).to.include.members([
      "dist/src/index.js",
      "dist/src/index.d.ts",
      "dist/src/provider.js",
      "dist/src/provider.d.ts",
      "dist/src/cli/bin.js",
      "dist/console/index.html",
      "dist/console/app.js",
      "dist/console/style.css",
    ]);
    expect(providerPackage.files.map((file) => file.path)).to.include.members([
      "dist/src/provider.js",
      "dist/src/provider.d.ts",
      "dist/src/providers/create-provider.js",
    ]);
  });

  it("ship the contract's .proto files and google/rpc/status.proto, from which a client builds its stubs", async () => {
    const contract = (await readdir(path.join(repoRoot, "proto/toolruntime/v1")))
      .filter((file) => file.endsWith(".proto"))
      .map((file) => `proto/toolruntime/v1/${file}`);
    expect(contract).to.include("proto/toolruntime/v1/runner.proto");
    const protos = [...contract, "proto/google/rpc/status.proto"].sort();
    expect(
      serverPackage.files
        .map((file) => file.path)
        .filter((file) => file.startsWith("proto/"))
        .sort(),
    ).to.deep.equal(protos);

    // The installed copy, as a client's build would use it: every import resolves within it
    // (the well-known types come with each compiler).
    const installed = path.join(toolsFolder, "node_modules/toolruntime/proto");
    const relative = protos.map((file) => file.slice("proto/".length));
    const resolved = await execFileAsync(
      process.execPath,
      ["-p", 'require.resolve("toolruntime/proto/google/rpc/status.proto")'],
      { cwd: toolsFolder },
    );
    expect(resolved.stdout.trim()).to.equal(path.join(installed, "google/rpc/status.proto"));
    await execFileAsync(path.join(repoRoot, "node_modules/.bin/buf"), [
      ...["build", installed, "-o", path.join(work, "contract.binpb")],
    ]);
    const stubs = path.join(work, "python-stubs");
    await mkdir(stubs);
    await execFileAsync(python, [
      ...["-m", "grpc_tools.protoc", "-I", installed],
      ...[`--python_out=${stubs}`, `--grpc_python_out=${stubs}`, ...relative],
    ]);
    await writeFile(path.join(stubs, "client.py"), pythonClient);
    const { stdout } = await execFileAsync(python, ["-B", "client.py", server.grpcAddress], {
      cwd: stubs,
      env: { ...process.env, PYTHONPATH: stubs },
    });
    expect(stdout).to.equal("NOT_FOUND 5 ActivationError no.such_tool\n");
  });

  it("let the provider SDK install without the server: no server code, no server dependency, a fraction of the size", async () => {
    const providerFiles = providerPackage.files.map((file) => file.path);
    expect(providerFiles.filter((file) => serverCode.test(file))).to.deep.equal([]);

    const manifest = JSON.parse(await readFile(path.join(repoRoot, "packages/provider/package.json"), "utf8")) as {
      version: string;
      dependencies: Record<string, string>;
    };
    const rootManifest = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as {
      version: string;
      dependencies: Record<string, string>;
    };
    expect(manifest.version, "the provider package's version").to.equal(rootManifest.version);
    for (const [name, range] of Object.entries(manifest.dependencies)) {
      expect(range, `the provider package's range of ${name}`).to.equal(rootManifest.dependencies[name]);
    }

    const installed = await installedPackages(providerFolder);
    expect(installed).to.include.members(["toolruntime-provider", ...Object.keys(manifest.dependencies)]);
    expect(
      installed.filter((name) => serverDependencies.includes(name) || name.startsWith("@opentelemetry/")),
    ).to.deep.equal([]);
    const providerBytes = await sizeOf(path.join(providerFolder, "node_modules"));
    const serverBytes = await sizeOf(path.join(toolsFolder, "node_modules"));
    expect(providerBytes, `provider ${providerBytes} bytes, server ${serverBytes} bytes`).to.be.below(serverBytes / 4);
  });

  it("serve a TypeScript and a JavaScript tool module with the installed toolruntime command and --tools", async () => {
    expect(server.output()).to.match(/tools: +builtin\.echo.*authored\.shout, authored\.greet, authored\.plain/);
    expect(await runTool(server, "authored.shout", { text: "quiet" })).to.deep.equal({
      text: "QUIET",
      tool: "authored.shout",
    });
    expect(await runTool(server, "authored.greet", { name: "Ada" })).to.deep.equal({ greeting: "Hello, Ada!" });
    expect(await runTool(server, "authored.plain", {})).to.deep.equal({ plain: true });
  });

  it("start the server from the installed toolruntime command with the Node flags it ships with", async () => {
    // The executable's first line runs node through `env -S`, which execs it in the same process.
    const commandLine = (await readFile(`/proc/${server.child.pid}/cmdline`, "utf8")).split("\0");
    expect(commandLine[0]).to.match(/(^|\/)node$/);
    expect(commandLine.slice(1, 1 + serverNodeFlags.length)).to.deep.equal([...serverNodeFlags]);
    expect(commandLine[1 + serverNodeFlags.length]).to.match(/\/node_modules\/\.bin\/toolruntime$/);
  });

  it("serve tools from TypeScript providers, on toolruntime-provider alone and on toolruntime/provider", async () => {
    const solo = await spawnUntil(process.execPath, ["dist/main.js", server.grpcAddress], providerFolder, "connected");
    const relay = await spawnUntil(process.execPath, ["dist/relay.js", server.grpcAddress], toolsFolder, "connected");
    try {
      expect(await runTool(server, "solo.reverse", { text: "abc" })).to.deep.equal({ reversed: "cba", by: "solo" });
      expect(await runTool(server, "relay.reverse", { text: "xyz" })).to.deep.equal({ reversed: "zyx", by: "relay" });
    } finally {
      expect(await solo.stop(), solo.output()).to.equal(0);
      expect(await relay.stop(), relay.output()).to.equal(0);
    }
  });
});

/** Runs a tool through RunTool on the server's HTTP port (Connect JSON) and returns its output. */
async function runTool(server: MainProcess, toolName: string, inputs: Record<string, string>): Promise<unknown> {
  const runner = createClient(RunnerService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
  let last;
  for await (const response of runner.runTool({ toolName, inputs })) last = response.event?.event;
  if (last?.case !== "completed") throw new Error(`the run of ${toolName} ended without completed: ${last?.case}`);
  expect(last.value.result?.success, JSON.stringify(last.value.result?.error)).to.equal(true);
  return last.value.result?.output;
}
