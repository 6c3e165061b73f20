import { toNodeHandler } from "@modelcontextprotocol/node";
import { expect } from "chai";
import { execFile } from "node:child_process";
import { EventEmitter } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { pino } from "pino";
import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { ToolChange } from "../../src/registry/change-log.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect } from "../support/expect-error.js";
import { connectMcpClient, mcpClientLines, type ProgressReport } from "../support/mcp-clients.js";
import { generatePythonStubs, python, repoRoot, type EventSeen, type ResultSeen } from "../support/python-harness.js";
import { startTestServer } from "../support/test-server.js";
import { createFixtureMcpHandler } from "../fixtures/mcp-fixture-server.js";

const execFileAsync = promisify(execFile);
const fixtureScript = path.join(repoRoot, "dist/test/fixtures/mcp-fixture-server.js");
const stdioTools = ["add_later", "exit_process", "fail", "needs_mapping", "slow"].map((tool) => `mcp.fixture.${tool}`);
const httpTools = stdioTools.map((name) => name.replace("mcp.fixture.", "mcp.web."));

/** Resolves once `predicate` holds for the default registry, checked now and at each change. */
function registryReaches(server: RunningServer, predicate: (names: Set<string>) => boolean): Promise<void> {
  const registry = server.runtime.registries.default;
  const names = () => new Set(registry.snapshot().tools.map((tool) => tool.spec.name));
  if (predicate(names())) return Promise.resolve();
  return new Promise((resolve) => {
    const unsubscribe = registry.subscribe(() => {
      if (!predicate(names())) return;
      unsubscribe();
      resolve();
    });
  });
}

interface ChangeSeen {
  readonly type: string;
  readonly name: string;
  readonly tool_type: string;
  readonly has_handler: boolean;
  readonly writes: boolean;
  readonly read_only: boolean;
  readonly idempotent: boolean;
}
interface RunSeen {
  readonly events: EventSeen[];
  readonly error: unknown;
}
interface TourSeen {
  readonly snapshot: ChangeSeen[];
  readonly slow: RunSeen;
  readonly fail: RunSeen;
  readonly mapped: RunSeen;
  readonly added: RunSeen;
  readonly live: ChangeSeen[];
  readonly late: RunSeen;
}

function resultOf(run: RunSeen): ResultSeen {
  expect(run.error).to.equal(null);
  const last = run.events.at(-1);
  expect(last?.kind).to.equal("completed");
  return last?.result as ResultSeen;
}

describe("MCP servers as providers (--mcp-server)", () => {
  const fixtureEvents = new EventEmitter();
  const stdioEvents = new EventEmitter();
  let fixture: http.Server;
  let server: RunningServer;
  let grpc: ClientStack;
  let stubsDir: string;

  before(async function () {
    this.timeout(60_000);
    const serveFixture = toNodeHandler(createFixtureMcpHandler((event) => fixtureEvents.emit(event)));
    fixture = http.createServer((request, response) => void serveFixture(request as never, response));
    await new Promise<void>((resolve) => fixture.listen(0, "127.0.0.1", resolve));
    const fixtureUrl = new URL(`http://127.0.0.1:${(fixture.address() as AddressInfo).port}/mcp`);
    // The stdio fixture's stderr reaches the server's log at debug level: its events come from there.
    const stderrLines = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString("utf8").split("\n")) {
          if (text === "") continue;
          const record = JSON.parse(text) as { msg?: string; stderr?: string };
          if (record.msg === "MCP server stderr" && record.stderr) stdioEvents.emit(record.stderr);
        }
        done();
      },
    });
    server = await startTestServer({
      logger: pino({ level: "debug" }, stderrLines),
      mcp: {
        servers: [
          { kind: "stdio", name: "fixture", command: process.execPath, args: [fixtureScript] },
          { kind: "http", name: "web", url: fixtureUrl },
        ],
        trustHints: ["web"],
        trustIdempotent: ["web"],
        backoff: { initialDelayMs: 20, maxDelayMs: 100 },
      },
    });
    grpc = createClientStack("grpc-js", server);
    stubsDir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-stubs-"));
    await Promise.all([
      generatePythonStubs(stubsDir),
      registryReaches(server, (names) => [...stdioTools, ...httpTools].every((name) => names.has(name))),
    ]);
  });
  after(async () => {
    grpc.close();
    await server.close(0);
    fixture.closeAllConnections();
    await new Promise((resolve) => fixture.close(resolve));
    await rm(stubsDir, { recursive: true, force: true });
  });

  it("registers each tool as mcp.NAME.TOOL, writes and not idempotent unless the operator trusts the server's hints", () => {
    const registry = server.runtime.registries.default;
    const flags = (name: string) => {
      const capabilities = registry.get(name)?.spec.capabilities;
      return { readOnly: capabilities?.readOnly, writes: capabilities?.writes, idempotent: capabilities?.idempotent };
    };
    expect(flags("mcp.fixture.slow")).to.deep.equal({ readOnly: false, writes: true, idempotent: false });
    expect(flags("mcp.web.slow")).to.deep.equal({ readOnly: true, writes: false, idempotent: true });
    expect(flags("mcp.web.fail")).to.deep.equal({ readOnly: false, writes: true, idempotent: false });
    expect(registry.get("mcp.fixture.slow")?.spec.inputSchema).to.deep.equal({
      type: "object",
      properties: { steps: { type: "integer" }, interval_ms: { type: "integer" } },
    });
  });

  it("is seen in WatchTools and run through RunTool from a Python grpcio client, with progress events", async function () {
    this.timeout(60_000);
    const { stdout } = await execFileAsync(
      python,
      [path.join(repoRoot, "test/python/mcp_import_client.py"), stubsDir, server.grpcAddress, "tour"],
      { cwd: repoRoot, timeout: 50_000 },
    );
    const seen = JSON.parse(stdout) as TourSeen;
    expect(seen.snapshot.map((change) => change.name)).to.deep.equal(stdioTools);
    for (const change of seen.snapshot) {
      expect(change).to.deep.include({
        type: "TOOL_CHANGE_TYPE_SNAPSHOT",
        tool_type: "mcp",
        has_handler: true,
        writes: true,
        read_only: false,
        idempotent: false,
      });
    }
    const progress = seen.slow.events.filter((event) => event.kind === "progress");
    expect(progress.map((event) => [event.fraction, event.message])).to.deep.equal([
      [1 / 3, "step 1 of 3"],
      [2 / 3, "step 2 of 3"],
      [1, "step 3 of 3"],
    ]);
    const slow = resultOf(seen.slow);
    expect(slow.success).to.equal(true);
    expect(slow.output).to.deep.equal({ steps: 3 });
    const failed = resultOf(seen.fail);
    expect(failed.success).to.equal(false);
    expect(failed.error).to.deep.equal({
      tool_name: "mcp.fixture.fail",
      error_type: "HandlerError",
      details: 'handler of "mcp.fixture.fail" failed: the fixture tool failed on purpose',
    });
    expect(resultOf(seen.mapped).output).to.deep.equal({ text: "mapped fine" });
    expect(resultOf(seen.added).output).to.deep.equal({ added: true });
    expect(seen.live.at(-1)).to.deep.include({ type: "TOOL_CHANGE_TYPE_ADDED", name: "mcp.fixture.late_tool" });
    expect(resultOf(seen.late).output).to.deep.equal({ late: true });
  });

  for (const [serverName, events] of [
    ["web", fixtureEvents],
    ["fixture", stdioEvents],
  ] as const) {
    it(`sends the run's cancellation to the MCP server (${serverName === "web" ? "HTTP, 2026-07-28" : "stdio, 2025-11-25"})`, async () => {
      const started = new Promise((resolve) => events.once("slow started", resolve));
      const cancelled = new Promise((resolve) => events.once("slow cancelled", resolve));
      const stream = grpc.runner.runTool({
        toolName: `mcp.${serverName}.slow`,
        inputs: { steps: 1, interval_ms: 60_000 },
      });
      const iterator = stream[Symbol.asyncIterator]();
      const first = await iterator.next();
      const executionId = first.done ? "" : (first.value.event?.executionId ?? "");
      await started;
      await grpc.executions.cancelExecution({ executionId });
      await cancelled;
      await server.runtime.executions.get(executionId).done;
      const { execution } = await grpc.executions.getExecution({ executionId });
      expect(execution?.state).to.equal(ExecutionState.CANCELLED);
      await iterator.return?.();
    });
  }

  for (const line of mcpClientLines) {
    it(`serves the imported tools to the ${line} MCP client through /mcp`, async () => {
      const client = await connectMcpClient(line, new URL(`${server.httpUrl}/mcp`));
      try {
        const names: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listPage(cursor);
          names.push(...page.tools.map((tool) => tool.name));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        expect(names).to.include.members([...stdioTools, ...httpTools]);
        const reports: ProgressReport[] = [];
        const result = await client.callTool(
          "mcp.web.slow",
          { steps: 2, interval_ms: 1 },
          { onprogress: (report) => reports.push(report) },
        );
        expect(result.structuredContent).to.deep.equal({ steps: 2 });
        expect(reports.map((report) => report.message).slice(1)).to.deep.equal(["50% step 1 of 2", "100% step 2 of 2"]);
        const failed = await client.callTool("mcp.fixture.fail");
        expect(failed.isError).to.equal(true);
        expect(failed._meta?.["io.toolruntime/error"]).to.deep.include({ error_type: "HandlerError" });
      } finally {
        await client.close();
      }
    });
  }

  it("removes a stdio server's tools when it exits and registers them again once it is restarted", async () => {
    const registry = server.runtime.registries.default;
    const changes: ToolChange[] = [];
    const unsubscribe = registry.subscribe((change) => changes.push(change));
    try {
      const back = registryReaches(
        server,
        (names) =>
          changes.some((change) => change.kind === "removed" && change.spec.name === "mcp.fixture.slow") &&
          stdioTools.every((name) => names.has(name)),
      );
      const { record } = server.runtime.executions.start({
        runner: server.runtime.runners.createPrivate(),
        requireActive: false,
        toolName: "mcp.fixture.exit_process",
        inputs: {},
        timeoutMs: 0,
        caller: "test",
      });
      await record.done;
      await back;
      const removed = changes.filter((change) => change.kind === "removed").map((change) => change.spec.name);
      expect(removed).to.include.members(stdioTools);
      expect(removed.some((name) => name.startsWith("mcp.web."))).to.equal(false);
    } finally {
      unsubscribe();
    }
  });

  it("ends a run with ProviderError when the MCP server cannot be reached", async () => {
    fixture.closeAllConnections();
    await new Promise((resolve) => fixture.close(resolve));
    const events = await collect(grpc.runner.runTool({ toolName: "mcp.web.fail" }));
    const last = events.at(-1)?.event;
    const outcome = last?.event.case === "completed" ? last.event.value.result : undefined;
    expect(outcome?.success).to.equal(false);
    expect(outcome?.error?.errorType).to.equal("ProviderError");
    expect(outcome?.error?.details).to.match(/^provider of "mcp\.web\.fail" failed: MCP server "web" failed: /);
  });
});
