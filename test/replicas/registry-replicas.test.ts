import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { RegistryService, ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { Code } from "@connectrpc/connect";
import { expectToolError } from "../support/expect-error.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { startMainProcess } from "../support/main-process.js";
import { sharedPostgres } from "../support/postgres-server.js";
import { generatePythonStubs, python, repoRoot, type RpcErrorSeen } from "../support/python-harness.js";
import { startReplicas, type Replicas } from "../support/replica-processes.js";

const execFileAsync = promisify(execFile);

/** Runs a scenario of test/python/replicas_client.py and returns what it printed. */
async function pythonScenario<T>(stubsDir: string, name: string, params: Record<string, unknown>): Promise<T> {
  const script = path.join(repoRoot, "test/python/replicas_client.py");
  const { stdout } = await execFileAsync(python, [script, stubsDir, name, JSON.stringify(params)], {
    cwd: repoRoot,
    timeout: 50_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as T;
}

type Outcome = { ok: true; version: string } | RpcErrorSeen;

describe("Replicas on one PostgreSQL store: the registry and activations", function () {
  this.timeout(120_000);
  let storeUrl: string;
  let replicas: Replicas;
  let stubsDir: string;

  before(async () => {
    storeUrl = await (await sharedPostgres()).createDatabase("replicas");
    [replicas, stubsDir] = await Promise.all([
      startReplicas(3, storeUrl),
      mkdtemp(path.join(os.tmpdir(), "toolruntime-replica-stubs-")),
    ]);
    await generatePythonStubs(stubsDir);
  });

  after(async () => {
    await replicas?.stop();
    if (stubsDir) await rm(stubsDir, { recursive: true, force: true });
  });

  const clients = () => replicas.grpcAddresses.map((address) => createGrpcJsClient(RegistryService, address));

  it("lets exactly one of 30 concurrent registrations of one name across three replicas win (Python grpcio)", async () => {
    const seen = await pythonScenario<{ outcomes: Outcome[]; descriptions: unknown[] }>(stubsDir, "register_race", {
      addresses: replicas.grpcAddresses,
      name: "race.across",
      per_replica: 10,
    });
    const winners = seen.outcomes.filter((outcome) => "version" in outcome);
    const losers = seen.outcomes.filter((outcome) => !("version" in outcome)) as RpcErrorSeen[];
    expect(winners).to.have.length(1);
    expect(losers).to.have.length(29);
    for (const loser of losers) {
      expect(loser.code).to.equal("ALREADY_EXISTS");
      expect(loser.message).to.contain('tool "race.across" is already registered');
    }
    // Every replica reads the one winner at once: a read brings the replica's view up to date.
    expect(new Set(seen.descriptions).size).to.equal(1);
    expect(seen.descriptions[0]).to.be.a("string");
  });

  it("streams every replica's changes to a WatchTools on a third, gapless and in commit order (grpc-js)", async () => {
    const [a, b, c] = clients() as [
      ReturnType<typeof clients>[number],
      ReturnType<typeof clients>[number],
      ReturnType<typeof clients>[number],
    ];
    try {
      const start = (await c.client.listTools({ pageSize: 1 })).registryVersion;
      const abort = new AbortController();
      const received: { type: ToolChangeType; version: bigint; name: string }[] = [];
      const watched = (async () => {
        for await (const message of c.client.watchTools({ fromVersion: start }, { signal: abort.signal })) {
          if (message.type === ToolChangeType.HEARTBEAT) continue;
          received.push({ type: message.type, version: message.version, name: message.spec?.name ?? "" });
          if (received.length === 40) break;
        }
      })();
      await Promise.all(
        Array.from({ length: 20 }, (_, index) => [
          a.client.registerTool({ spec: { name: `watch.from_a${index}` } }),
          b.client.registerTool({ spec: { name: `watch.from_b${index}` } }),
        ]).flat(),
      );
      await watched;
      abort.abort();
      expect(received.map((change) => change.version)).to.deep.equal(
        Array.from({ length: 40 }, (_, index) => start + BigInt(index + 1)),
      );
      expect(received.every((change) => change.type === ToolChangeType.ADDED)).to.equal(true);
      expect(new Set(received.map((change) => change.name)).size).to.equal(40);
    } finally {
      for (const each of [a, b, c]) each.close();
    }
  });

  it("resumes a watch from a version on another replica than the one that wrote it (Python grpcio)", async () => {
    const [a, b] = clients() as [ReturnType<typeof clients>[number], ReturnType<typeof clients>[number]];
    try {
      const before = (await a.client.listTools({ pageSize: 1 })).registryVersion;
      for (let index = 0; index < 5; index++) await a.client.registerTool({ spec: { name: `resume.t${index}` } });
      await a.client.removeTool({ name: "resume.t0" });
      const seen = await pythonScenario<{ changes: { type: string; version: string; name: string }[] }>(
        stubsDir,
        "watch",
        { addresses: replicas.grpcAddresses, watch_on: 2, from_version: Number(before), count: 6 },
      );
      expect(seen.changes.map((change) => BigInt(change.version))).to.deep.equal(
        Array.from({ length: 6 }, (_, index) => before + BigInt(index + 1)),
      );
      expect(seen.changes.map((change) => change.type)).to.deep.equal([
        ...Array<string>(5).fill("TOOL_CHANGE_TYPE_ADDED"),
        "TOOL_CHANGE_TYPE_REMOVED",
      ]);
      expect(seen.changes.at(-1)?.name).to.equal("resume.t0");
    } finally {
      a.close();
      b.close();
    }
  });

  it("lets exactly one of concurrent registrations of one name across three replicas win (grpc-js)", async () => {
    const registries = clients();
    try {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 30 }, (_, index) =>
          registries[index % 3]!.client.registerTool({ spec: { name: "race.grpcjs", description: `${index}` } }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).to.have.length(1);
      for (const outcome of outcomes.filter((each) => each.status === "rejected")) {
        await expectToolError(Promise.reject(outcome.reason as Error), Code.AlreadyExists, "RegistrationError");
      }
      const seen = await Promise.all(registries.map((each) => each.client.getTool({ name: "race.grpcjs" })));
      expect(new Set(seen.map((each) => each.spec?.description)).size).to.equal(1);
    } finally {
      for (const each of registries) each.close();
    }
  });

  it("shares activations through any replica (grpc-js)", async () => {
    const runners = replicas.grpcAddresses.map((address) => createGrpcJsClient(RunnerService, address));
    try {
      const [a, b, c] = runners as [(typeof runners)[number], (typeof runners)[number], (typeof runners)[number]];
      expect((await c.client.activateTool({ runner: "grpcjs", toolName: "builtin.echo" })).alreadyActive).to.equal(
        false,
      );
      const executed = await a.client.executeTool({ runner: "grpcjs", toolName: "builtin.echo", inputs: { n: 1 } });
      expect(executed.result?.output).to.deep.equal({ echo: { n: 1 } });
      expect((await b.client.deactivateTool({ runner: "grpcjs", toolName: "builtin.echo" })).wasActive).to.equal(true);
      await expectToolError(
        c.client.executeTool({ runner: "grpcjs", toolName: "builtin.echo", inputs: {} }),
        Code.FailedPrecondition,
        "NotActiveError",
      );
    } finally {
      for (const each of runners) each.close();
    }
  });

  it("shares activations: activated on one replica, executed on another, deactivated on a third (Python grpcio)", async () => {
    const seen = await pythonScenario<{
      already_active: boolean;
      result: { success: boolean; output: { echo: { message: string } } };
      was_active: boolean;
      refused: RpcErrorSeen;
    }>(stubsDir, "activations", { addresses: replicas.grpcAddresses, tool: "builtin.echo" });
    expect(seen.already_active).to.equal(false);
    expect(seen.result.success).to.equal(true);
    expect(seen.result.output.echo.message).to.equal("across replicas");
    expect(seen.was_active).to.equal(true);
    expect(seen.refused.code).to.equal("FAILED_PRECONDITION");
    expect(seen.refused.tool_error?.error_type).to.equal("NotActiveError");
  });

  it("keeps every registered spec, and the registry's version, across a restart of every replica", async () => {
    const [a] = clients() as [ReturnType<typeof clients>[number]];
    let before: { names: string[]; version: bigint };
    try {
      await a.client.registerTool({ spec: { name: "durable.tool", description: "kept" } });
      const page = await a.client.listTools({ pageSize: 1000 });
      before = { names: page.tools.map((tool) => tool.name), version: page.registryVersion };
    } finally {
      a.close();
    }
    await replicas.stop();
    replicas = await startReplicas(1, storeUrl);
    const [fresh] = clients() as [ReturnType<typeof clients>[number]];
    try {
      const page = await fresh.client.listTools({ pageSize: 1000 });
      expect(page.tools.map((tool) => tool.name)).to.deep.equal(before.names);
      // The built-in tools were adopted at start, not registered again: no new version.
      expect(page.registryVersion).to.equal(before.version);
      expect((await fresh.client.getTool({ name: "durable.tool" })).spec?.description).to.equal("kept");
      const next = await fresh.client.registerTool({ spec: { name: "durable.next" } });
      expect(next.spec?.version).to.equal(before.version + 1n);
    } finally {
      fresh.close();
    }
    await replicas.stop();
    replicas = await startReplicas(3, storeUrl);
  });

  it("refuses to start when the store cannot be reached, naming the URL with its password masked", async () => {
    const server = startMainProcess(["--store", "postgres://app:s3cret@127.0.0.1:1/toolruntime"]);
    const failure = await server.then(
      () => expect.fail("the server should not have started"),
      (error: Error) => error.message,
    );
    expect(failure).to.match(/^exited with 1:/);
    expect(failure).to.contain("cannot reach the store at postgres://app:***@127.0.0.1:1/toolruntime");
    expect(failure).to.not.contain("s3cret");
  });

  it("runs a built-in tool through any replica (grpc-js)", async () => {
    for (const address of replicas.grpcAddresses) {
      const runner = createGrpcJsClient(RunnerService, address);
      try {
        const events = [];
        for await (const message of runner.client.runTool({ toolName: "builtin.echo", inputs: { message: address } })) {
          events.push(message.event);
        }
        const completed = events.at(-1);
        expect(completed?.event.case).to.equal("completed");
        if (completed?.event.case === "completed") {
          expect(completed.event.value.result?.output).to.deep.equal({ echo: { message: address } });
        }
      } finally {
        runner.close();
      }
    }
  });
});
