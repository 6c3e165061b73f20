import { status, type Client, type ClientReadableStream, type ServiceError } from "@grpc/grpc-js";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { ExecutionService, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { fromBinary } from "@bufbuild/protobuf";
import pg from "pg";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { expectToolError } from "../support/expect-error.js";
import type { MainProcess } from "../support/main-process.js";
import { sharedPostgres, startPostgres, type PostgresServer } from "../support/postgres-server.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";
import {
  replicaClients,
  startProxiedReplicas,
  type ProxiedReplicas,
  type ReplicaClients,
} from "../support/proxied-replicas.js";
import { pythonReplicaScenario, pythonWatchToEnd } from "../support/python-replica-client.js";
import { startReplicas } from "../support/replica-processes.js";
import { completedResult, kinds, startedAttempts, watchUntil } from "../support/run-watch.js";

// Faults a mesh brings, made real: statements whose answer is lost after they committed and
// connections cut mid-transaction (a PostgreSQL-aware proxy in front of each replica), a database
// restarted under load, a replica partitioned from the database past its lease, handlers that
// block the event loop, and a pool exhausted by load. Each test checks the history, not only the
// last state.

const toolsModule = "dist/test/support/replica-tools.js";

/** Whether the replica process is still running, with its output for the failure message. */
function expectAlive(process: MainProcess): void {
  expect(process.child.exitCode, `the replica exited:\n${process.output()}`).to.equal(null);
  expect(process.child.signalCode, `the replica was killed:\n${process.output()}`).to.equal(null);
}

/** The outcome of a call: "OK", or its status code's name. */
async function outcomeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "OK";
  } catch (error) {
    return error instanceof ConnectError ? Code[error.code] : `not a status: ${String(error)}`;
  }
}

/** The step numbers of the progress events among `events` ("step N in PID"), in order. */
function progressSteps(events: RunEvent[]): number[] {
  return events.flatMap((event) =>
    event.event.case === "progress" ? [Number(/step (\d+)/.exec(event.event.value.message)?.[1])] : [],
  );
}

const isProgress = (event: RunEvent) => event.event.case === "progress";

/**
 * Replicas for the tests of one `describe`, each through a fault proxy of its own, on a fresh
 * database of the shared PostgreSQL, with the replica tools and `args`: started before the tests,
 * stopped after them. Call it in the describe's body; read its getters in hooks and tests.
 */
function proxiedReplicasFixture(count: number, databasePrefix: string, args: readonly string[]) {
  let replicas: ProxiedReplicas | undefined;
  let url = "";
  before(async () => {
    const postgres = await sharedPostgres();
    url = await postgres.createDatabase(databasePrefix);
    replicas = await startProxiedReplicas(count, url, postgres.port, ["--tools", toolsModule, ...args]);
  });
  after(async () => {
    await replicas?.stop();
  });
  return {
    replicas: () => replicas as ProxiedReplicas,
    url: () => url,
  };
}

/**
 * A run's events as the database holds them, read directly: each row's sequence and the sequence
 * of the event it holds, and the run's `last_sequence`.
 */
async function storedEvents(url: string, id: string) {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ sequence: number; event: Buffer }>(
      "SELECT sequence, event FROM toolruntime.execution_events WHERE execution_id = $1 ORDER BY sequence",
      [id],
    );
    const run = await client.query<{ last_sequence: number }>(
      "SELECT last_sequence FROM toolruntime.executions WHERE id = $1",
      [id],
    );
    return {
      rows: rows.map((row) => ({
        sequence: row.sequence,
        own: Number(fromBinary(RunEventSchema, row.event).sequence),
      })),
      lastSequence: run.rows[0]?.last_sequence,
    };
  } finally {
    await client.end();
  }
}

/**
 * Runs `start`, and again after the delay the server gives (its ToolError's retry_after_ms, or
 * 100 ms) while it sheds the run with RESOURCE_EXHAUSTED or UNAVAILABLE, for up to 5 s.
 */
async function retryWhenShed<T>(start: () => Promise<T>): Promise<T> {
  const until = Date.now() + 5000;
  for (;;) {
    try {
      return await start();
    } catch (error) {
      const shed =
        error instanceof ConnectError && (error.code === Code.ResourceExhausted || error.code === Code.Unavailable);
      if (!shed || Date.now() > until) throw error;
      const retryAfterMs = Number(error.findDetails(ToolErrorSchema)[0]?.retryAfterMs ?? 0) || 100;
      await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterMs, 1000)));
    }
  }
}

describe("Replicas under faults: a connection cut in the middle of a transaction", function () {
  this.timeout(120_000);
  const fixture = proxiedReplicasFixture(2, "cut", ["--replica-lease-ms", "1000"]);
  let replicas: ProxiedReplicas;

  before(() => {
    replicas = fixture.replicas();
  });

  it("answers UNAVAILABLE for a registration whose transaction lost its connection, keeps running, and commits the next", async () => {
    const [a] = replicas.clients as [ReplicaClients];
    const cut = replicas.proxies[0]!.dropAnswerTo("FROM toolruntime.registries WHERE name = $1 FOR UPDATE");
    await expectToolError(
      a.registry.registerTool({ spec: { name: "faults.cut_registration" } }),
      Code.Unavailable,
      "UnavailableError",
      "the store at postgres://",
    );
    expect(await cut).to.equal(1);
    expectAlive(replicas.processes[0]!);
    // Nothing of the cut transaction was committed: the same name registers now.
    const registered = await a.registry.registerTool({ spec: { name: "faults.cut_registration" } });
    expect(registered.spec?.name).to.equal("faults.cut_registration");
  });

  it("keeps running when a sweep's transaction loses its connection", async () => {
    const [a] = replicas.clients as [ReplicaClients];
    // Each replica sweeps every half lease: the next sweep of A loses its connection mid-transaction.
    expect(await replicas.proxies[0]!.dropAnswerTo("ORDER BY ordinal LIMIT 100 FOR UPDATE SKIP LOCKED")).to.equal(1);
    const listed = await a.executions.listExecutions({});
    expect(listed.executions).to.be.an("array");
    expectAlive(replicas.processes[0]!);
  });

  it("answers UNAVAILABLE for a cancel whose transaction lost its connection, keeps running, and cancels on the next try", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    const started = await b.executions.startExecution({ toolName: "replica.writes", inputs: { interval_ms: 50 } });
    const id = started.execution!.executionId;
    await watchUntil(a, id, isProgress);
    const cut = replicas.proxies[0]!.dropAnswerTo(/live FROM toolruntime\.executions WHERE id = \$1 FOR UPDATE/);
    await expectToolError(
      a.executions.cancelExecution({ executionId: id }),
      Code.Unavailable,
      "UnavailableError",
      "the store at postgres://",
    );
    expect(await cut).to.equal(1);
    expectAlive(replicas.processes[0]!);
    await a.executions.cancelExecution({ executionId: id });
    const events = await watchUntil(b, id);
    expect(completedResult(events)?.error?.errorType).to.equal("CancelledError");
  });
});

describe("Replicas under faults: PostgreSQL restarted under a registration load", function () {
  this.timeout(120_000);
  let postgres: PostgresServer;

  before(async () => {
    postgres = await startPostgres();
  });

  after(async () => {
    await postgres?.stop();
  });

  it("keeps all three replicas running through two restarts, answering only OK or UNAVAILABLE, and serving after each", async () => {
    const replicas = await startReplicas(3, await postgres.createDatabase("restarts"), ["--replica-lease-ms", "1000"]);
    const clients = replicas.grpcAddresses.map(replicaClients);
    const outcomes = new Map<string, number>();
    let loading = true;
    let registered = 0;
    // Four registrations in flight on each replica, one after the other, until the test says stop.
    const load = clients.flatMap((client, replica) =>
      Array.from({ length: 4 }, async (_, lane) => {
        for (let index = 0; loading; index++) {
          const name = `faults.restart_${replica}_${lane}_${index}`;
          // A deadline, so that a call left hanging fails the test with its name, not by its timeout.
          const outcome = await outcomeOf(client.registry.registerTool({ spec: { name } }, { timeoutMs: 15_000 }));
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          if (outcome === "OK") registered += 1;
        }
      }),
    );
    try {
      for (let restart = 1; restart <= 2; restart++) {
        const before = registered;
        await postgres.pause();
        await postgres.resume();
        // Every replica registers again after the restart (read from its own client).
        for (const [replica, client] of clients.entries()) {
          const name = `faults.after_restart_${restart}_${replica}`;
          for (;;) {
            const outcome = await outcomeOf(client.registry.registerTool({ spec: { name } }, { timeoutMs: 15_000 }));
            // ALREADY_EXISTS: an earlier try committed, but its answer was lost in the restart.
            if (outcome === "OK" || outcome === "AlreadyExists") break;
            expect(outcome, `replica ${replica} registering ${name}`).to.equal("Unavailable");
          }
          expect((await client.registry.getTool({ name }, { timeoutMs: 15_000 })).spec?.name).to.equal(name);
        }
        expect(registered, "registrations went on between restarts").to.be.greaterThan(before);
      }
      loading = false;
      await Promise.all(load);
      for (const process of replicas.processes) expectAlive(process);
      expect([...outcomes.keys()].sort()).to.satisfy((codes: string[]) =>
        codes.every((code) => code === "OK" || code === "Unavailable"),
      );
      expect(outcomes.get("OK")).to.be.greaterThan(0);
    } finally {
      loading = false;
      await Promise.allSettled(load);
      for (const client of clients) client.close();
      await replicas.stop();
    }
  });
});

describe("Replicas under faults: lost answers to a run's writes", function () {
  this.timeout(120_000);
  const fixture = proxiedReplicasFixture(2, "lost_answers", ["--replica-lease-ms", "1000"]);
  let replicas: ProxiedReplicas;
  let url: string;

  before(() => {
    replicas = fixture.replicas();
    url = fixture.url();
  });

  it("answers with the run it created, executed once, when the answer to the creation was lost", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    const lost = replicas.proxies[0]!.dropAnswerTo("toolruntime.create_run");
    const started = await a.executions.startExecution({
      toolName: "replica.idempotent",
      inputs: { ms: 10 },
      options: { idempotencyKey: "lost-create-once" },
    });
    expect(await lost).to.equal(1);
    expect(started.deduplicated).to.equal(false);
    const id = started.execution!.executionId;
    const events = await watchUntil(b, id);
    expect(completedResult(events)?.success).to.equal(true);
    expect(startedAttempts(events)).to.deep.equal([1]);
    const listed = await b.executions.listExecutions({ toolName: "replica.idempotent" });
    const keyed = listed.executions.filter((execution) => execution.idempotencyKey === "lost-create-once");
    expect(keyed.map((execution) => execution.executionId)).to.deep.equal([id]);
  });

  it("executes, once, a run whose every creation answer was lost, for the caller retrying with its key (Python grpcio)", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    const lost = replicas.proxies[0]!.dropAnswerTo("toolruntime.create_run", 3);
    await expectToolError(
      a.executions.startExecution({
        toolName: "replica.idempotent",
        inputs: { ms: 10 },
        options: { idempotencyKey: "lost-create-thrice" },
      }),
      Code.Unavailable,
      "UnavailableError",
      "the store at postgres://",
    );
    expect(await lost).to.equal(3);
    // The caller retries through the same replica, which the store says owns the run it never held.
    const retried = await pythonReplicaScenario<{ ok: boolean; execution_id: string; deduplicated: boolean }>(
      "start_keyed",
      replicas.grpcAddresses,
      { on: 0, tool: "replica.idempotent", inputs: { ms: 10 }, key: "lost-create-thrice" },
    );
    expect(retried.ok, JSON.stringify(retried)).to.equal(true);
    expect(retried.deduplicated).to.equal(true);
    const seen = await pythonWatchToEnd(replicas.grpcAddresses[1]!, retried.execution_id);
    expect(seen.state).to.equal("EXECUTION_STATE_SUCCEEDED");
    expect(seen.events.filter((event) => event.kind === "execution_started")).to.have.length(1);
    const record = await b.executions.getExecution({ executionId: retried.execution_id });
    expect(record.execution?.attempts).to.equal(1);
  });

  it("ends CANCELLED a run whose every creation answer was lost when it is cancelled through another replica", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    const lost = replicas.proxies[0]!.dropAnswerTo("toolruntime.create_run", 3);
    await expectToolError(
      a.executions.startExecution({
        toolName: "replica.writes",
        inputs: { interval_ms: 50 },
        options: { idempotencyKey: "lost-then-cancelled" },
      }),
      Code.Unavailable,
      "UnavailableError",
    );
    await lost;
    const listed = await b.executions.listExecutions({ toolName: "replica.writes" });
    const run = listed.executions.find((execution) => execution.idempotencyKey === "lost-then-cancelled");
    expect(run, "the run was created").to.not.equal(undefined);
    const id = run!.executionId;
    await b.executions.cancelExecution({ executionId: id });
    const events = await watchUntil(b, id);
    expect(completedResult(events)?.error?.errorType).to.equal("CancelledError");
    expect((await a.executions.getExecution({ executionId: id })).execution?.state).to.equal(ExecutionState.CANCELLED);
  });

  it("stores each event once and gapless when the answers to two of a run's event flushes are lost", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    const started = await a.executions.startExecution({
      toolName: "replica.writes",
      inputs: { interval_ms: 20, ms: 1500 },
    });
    const id = started.execution!.executionId;
    await watchUntil(b, id, isProgress);
    expect(await replicas.proxies[0]!.dropAnswerTo("INSERT INTO toolruntime.execution_events", 2)).to.equal(2);
    const events = await watchUntil(b, id);
    expect(completedResult(events)?.success, JSON.stringify(completedResult(events)?.error)).to.equal(true);
    expect(events.map((event) => Number(event.sequence))).to.deep.equal(events.map((_, index) => index + 1));
    const steps = progressSteps(events);
    expect(steps).to.deep.equal(steps.map((_, index) => index + 1));
    expect(kinds(events).filter((kind) => kind === "completed")).to.have.length(1);
    const python = await pythonWatchToEnd(replicas.grpcAddresses[1]!, id);
    expect(python.events.map((event) => Number(event.sequence))).to.deep.equal(events.map((_, index) => index + 1));
    // In the store itself: one row per event, under the event's own sequence number.
    const stored = await storedEvents(url, id);
    expect(stored.rows.map((row) => row.sequence)).to.deep.equal(events.map((_, index) => index + 1));
    expect(stored.rows.map((row) => row.own)).to.deep.equal(stored.rows.map((row) => row.sequence));
    expect(stored.lastSequence).to.equal(events.length);
  });
});

describe("Replicas under faults: a replica partitioned from the store past its lease", function () {
  this.timeout(120_000);
  // A lease of 2 s: the replicas that are not partitioned must not lose theirs on a loaded machine.
  const fixture = proxiedReplicasFixture(3, "partition", ["--replica-lease-ms", "2000", "--store-timeout-ms", "1500"]);
  let replicas: ProxiedReplicas;

  before(() => {
    replicas = fixture.replicas();
  });

  it("answers UNAVAILABLE rather than from memory, commits nothing sent before the heal, and agrees with the store after it", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    const proxy = replicas.proxies[0]!;
    const writes = (await a.executions.startExecution({ toolName: "replica.writes", inputs: { interval_ms: 50 } }))
      .execution!.executionId;
    const idempotentStart = (
      await a.executions.startExecution({ toolName: "replica.idempotent", inputs: { interval_ms: 50 } })
    ).execution!;
    const idempotent = idempotentStart.executionId;
    const elsewhere = (await b.executions.startExecution({ toolName: "replica.writes", inputs: { interval_ms: 50 } }))
      .execution!.executionId;
    await watchUntil(b, writes, isProgress);
    await watchUntil(b, idempotent, isProgress);

    proxy.blackHole();
    // A creation sent into the partition, whose caller gives up after a second.
    const late = await outcomeOf(
      a.executions.startExecution(
        { toolName: "replica.writes", inputs: { interval_ms: 50 }, options: { idempotencyKey: "sent-in-partition" } },
        { timeoutMs: 1000 },
      ),
    );
    expect(late).to.equal("DeadlineExceeded");
    // The others take A's runs once its lease expires: the writes run ends, the idempotent one moves.
    const ended = await watchUntil(b, writes);
    expect(completedResult(ended)?.error?.errorType).to.equal("ReplicaLostError");
    const moved = await watchUntil(b, idempotent, (event) => startedAttempts([event])[0] === 2);
    expect(kinds(moved)).to.include("retryScheduled");

    // A, past its lease, no longer answers for its runs from memory: the store it cannot reach does.
    await expectToolError(
      a.executions.getExecution({ executionId: writes }, { timeoutMs: 10_000 }),
      Code.Unavailable,
      "UnavailableError",
      "the store at postgres://",
    );
    const python = await pythonReplicaScenario<{ ok: boolean; code: string }>("read", replicas.grpcAddresses, {
      on: 0,
      id: idempotent,
      timeout_s: 10,
    });
    expect(python.code, JSON.stringify(python)).to.equal("UNAVAILABLE");
    await expectToolError(
      a.executions.cancelExecution({ executionId: elsewhere }, { timeoutMs: 10_000 }),
      Code.Unavailable,
      "UnavailableError",
    );
    // A new run through A fails fast (the store timeout, 1.5 s), not at the caller's deadline.
    const startedAt = Date.now();
    await expectToolError(
      a.executions.startExecution({ toolName: "replica.writes", inputs: {} }, { timeoutMs: 20_000 }),
      Code.Unavailable,
      "UnavailableError",
      "the store at postgres://",
    );
    expect(Date.now() - startedAt).to.be.lessThan(10_000);

    proxy.heal();
    await proxy.settled();
    // What A sent during the partition reached the database after the caller's deadline: refused.
    // Right after the heal the store takes A's backlog, and B may shed a new run meanwhile
    // (RESOURCE_EXHAUSTED, or UNAVAILABLE while its doorbell's heartbeat waits): a client retries
    // after the delay it is given, as here (the key makes the retry safe).
    const again = await retryWhenShed(() =>
      b.executions.startExecution({
        toolName: "replica.writes",
        inputs: { interval_ms: 50 },
        options: { idempotencyKey: "sent-in-partition" },
      }),
    );
    expect(again.deduplicated, "the creation sent in the partition was committed after the heal").to.equal(false);
    await b.executions.cancelExecution({ executionId: again.execution!.executionId });

    // A agrees with the store about the runs it lost, and cancels through the store.
    const lost = await a.executions.getExecution({ executionId: writes }, { timeoutMs: 10_000 });
    expect(lost.execution?.state).to.equal(ExecutionState.FAILED);
    expect(lost.execution?.result?.error?.errorType).to.equal("ReplicaLostError");
    const retried = await a.executions.getExecution({ executionId: idempotent }, { timeoutMs: 10_000 });
    expect(retried.execution?.state).to.equal(ExecutionState.RUNNING);
    expect(retried.execution?.attempts).to.equal(2);
    expect(retried.execution?.replicasLost).to.equal(1);
    // Taken over, it keeps the time it was created.
    expect(retried.execution?.createdAt).to.deep.equal(idempotentStart.createdAt);
    await a.executions.cancelExecution({ executionId: idempotent }, { timeoutMs: 10_000 });
    await a.executions.cancelExecution({ executionId: elsewhere }, { timeoutMs: 10_000 });
    for (const id of [idempotent, elsewhere]) {
      const events = await watchUntil(b, id);
      expect(completedResult(events)?.error?.errorType).to.equal("CancelledError");
      const read = await a.executions.getExecution({ executionId: id }, { timeoutMs: 10_000 });
      expect(read.execution?.state).to.equal(ExecutionState.CANCELLED);
    }
    // The writes run's events end with its loss: A wrote nothing after it.
    const after = await watchUntil(a, writes);
    expect(after.map((event) => event.sequence)).to.deep.equal(ended.map((event) => event.sequence));
  });
});

describe("Replicas under faults: handlers that block the event loop", function () {
  this.timeout(120_000);

  it("keeps the lease through a stall longer than the lease: the run is not taken over, the replica's other runs go on, the stall is logged", async () => {
    const postgres = await sharedPostgres();
    const replicas = await startReplicas(2, await postgres.createDatabase("stall"), [
      "--tools",
      toolsModule,
      "--replica-lease-ms",
      "1000",
    ]);
    const [a, b] = replicas.grpcAddresses.map(replicaClients) as [ReplicaClients, ReplicaClients];
    try {
      const writes = (
        await a.executions.startExecution({ toolName: "replica.writes", inputs: { interval_ms: 50, ms: 4000 } })
      ).execution!.executionId;
      await watchUntil(b, writes, isProgress);
      const stall = (await a.executions.startExecution({ toolName: "replica.stall", inputs: { ms: 2500 } })).execution!
        .executionId;
      const stalled = await watchUntil(b, stall);
      expect(completedResult(stalled)?.success, JSON.stringify(completedResult(stalled)?.error)).to.equal(true);
      expect(startedAttempts(stalled)).to.deep.equal([1]);
      const other = await watchUntil(b, writes);
      expect(completedResult(other)?.success, JSON.stringify(completedResult(other)?.error)).to.equal(true);
      const python = await pythonWatchToEnd(replicas.grpcAddresses[1]!, stall);
      expect(python.attempts).to.equal(1);
      expect(replicas.processes[0]!.output()).to.match(/the event loop was blocked for \d+ ms/);
    } finally {
      a.close();
      b.close();
      await replicas.stop();
    }
  });

  it("ends a run that stalls every replica it visits past the stall limit after its attempts, naming the replicas lost", async () => {
    const postgres = await sharedPostgres();
    const replicas = await startReplicas(3, await postgres.createDatabase("poison"), [
      "--tools",
      toolsModule,
      "--replica-lease-ms",
      "1000",
      "--replica-max-stall-ms",
      "1500",
    ]);
    const clients = replicas.grpcAddresses.map(replicaClients);
    const [a, b] = clients as [ReplicaClients, ReplicaClients];
    try {
      const id = (await a.executions.startExecution({ toolName: "replica.stall", inputs: { ms: 5000 } })).execution!
        .executionId;
      const events = await watchUntil(b, id);
      const result = completedResult(events);
      expect(result?.success).to.equal(false);
      expect(result?.error?.errorType).to.equal("ReplicaLostError");
      expect(result?.error?.details).to.contain("2 replicas were lost");
      expect(startedAttempts(events)).to.deep.equal([1, 2]);
      expect(kinds(events).filter((kind) => kind === "retryScheduled")).to.have.length(1);
      const record = (await b.executions.getExecution({ executionId: id })).execution;
      expect(record?.replicasLost).to.equal(2);
      expect(record?.attempts).to.equal(2);
      expect(result?.durationMs).to.be.greaterThan(1000);
      for (const process of replicas.processes) expectAlive(process);
    } finally {
      for (const client of clients) client.close();
      await replicas.stop();
    }
  });
});

type HealthClient = Client & {
  Watch(request: { service: string }): ClientReadableStream<{ status: string }>;
};

/**
 * `callers` callers through `client`, each starting its next run (of `replica.idempotent`, keyed
 * when `keyed`) as soon as the last answered, until `endsAt`: the status of every call, counted.
 */
async function closedLoad(client: ReplicaClients, callers: number, endsAt: number, keyed: boolean) {
  const outcomes: string[] = [];
  let calls = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (Date.now() < endsAt) {
        const options = keyed ? { idempotencyKey: `load-${(calls += 1)}` } : undefined;
        try {
          await client.executions.startExecution(
            { toolName: "replica.idempotent", inputs: { ms: 0 }, options },
            { timeoutMs: 3000 },
          );
          outcomes.push("OK");
        } catch (error) {
          const code = error instanceof ConnectError ? Code[error.code] : String(error);
          if (code === "ResourceExhausted") {
            expect((error as ConnectError).rawMessage).to.match(
              /(connections to the store stayed busy with|writes to the store are \d+ ms behind the) work under way.*retry in \d+ ms/,
            );
            expect((error as ConnectError).findDetails(ToolErrorSchema)[0]?.retryAfterMs).to.be.greaterThan(0);
          }
          outcomes.push(code);
        }
      }
    }),
  );
  const counts = new Map<string, number>();
  for (const outcome of outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  return counts;
}

/** Health statuses seen by a Watch of the server's health, until `stop`. */
function watchHealth(address: string) {
  const health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", address) as HealthClient;
  const statuses: string[] = [];
  const watch = health.Watch({ service: "" });
  watch.on("data", (message: { status: string }) => statuses.push(message.status));
  watch.on("error", (error: ServiceError) => {
    if (error.code !== status.CANCELLED) statuses.push(`error ${error.code}`);
  });
  return {
    statuses,
    stop: () => {
      watch.cancel();
      health.close();
    },
  };
}

/** Only OK, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED, some of the first two each; SERVING throughout. */
async function expectShedOnly(counts: Map<string, number>, client: ReplicaClients, statuses: string[]) {
  const seen = JSON.stringify([...counts]);
  expect([...counts.keys()].every((code) => ["OK", "ResourceExhausted", "DeadlineExceeded"].includes(code))).to.equal(
    true,
    seen,
  );
  expect(counts.get("OK") ?? 0, seen).to.be.greaterThan(0);
  expect(counts.get("ResourceExhausted") ?? 0, seen).to.be.greaterThan(0);
  // Readiness follows the store, which answered throughout: never NOT_SERVING.
  const check = await client.executions.listExecutions({ pageSize: 1 }, { timeoutMs: 10_000 });
  expect(check.executions).to.have.length(1);
  expect(statuses).to.include("SERVING");
  expect(statuses.filter((each) => each !== "SERVING")).to.deep.equal([]);
}

describe("Replicas under faults: a store behind its load", function () {
  this.timeout(120_000);

  it("sheds new keyed runs (a statement each) when the pool's connections stay busy, answers nothing INTERNAL, and stays SERVING", async () => {
    const postgres = await sharedPostgres();
    const replicas = await startReplicas(1, await postgres.createDatabase("exhausted"), [
      "--tools",
      toolsModule,
      "--store-pool-size",
      "2",
    ]);
    const client = replicaClients(replicas.grpcAddresses[0]!);
    const health = watchHealth(replicas.grpcAddresses[0]!);
    try {
      // 300 callers for 4 s: a queue for the pool's two connections that stands, not a burst that drains.
      const counts = await closedLoad(client, 300, Date.now() + 4000, true);
      await expectShedOnly(counts, client, health.statuses);
      expectAlive(replicas.processes[0]!);
    } finally {
      health.stop();
      client.close();
      await replicas.stop();
    }
  });

  it("refuses new runs at once while its writes wait behind a lock the store holds, finishes the runs under way, and stays SERVING", async () => {
    const postgres = await sharedPostgres();
    const url = await postgres.createDatabase("stalled");
    const replicas = await startReplicas(1, url, ["--tools", toolsModule]);
    const client = replicaClients(replicas.grpcAddresses[0]!);
    const health = watchHealth(replicas.grpcAddresses[0]!);
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    try {
      const endsAt = Date.now() + 4000;
      const load = closedLoad(client, 100, endsAt, false);
      // A second of load, then the runs' table is locked for 800 ms (as a migration or a
      // maintenance statement may): the store answers everything else, the runs' writes wait.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE toolruntime.executions IN EXCLUSIVE MODE");
      await new Promise((resolve) => setTimeout(resolve, 400));
      // New runs 400 ms into it: the replica's writes are that far behind, so each is refused at
      // once, before the lock goes, rather than queued behind it. On a connection of their own
      // (the load's holds the 100 streams the server allows one).
      const arriving = createClient(
        ExecutionService,
        createGrpcTransport({ baseUrl: `http://${replicas.grpcAddresses[0]!}` }),
      );
      const sentAt = Date.now();
      const arrivals = Array.from({ length: 20 }, async () => {
        const outcome = await outcomeOf(
          arriving.startExecution({ toolName: "replica.idempotent", inputs: { ms: 0 } }, { timeoutMs: 3000 }),
        );
        return { outcome, answeredAfterMs: Date.now() - sentAt };
      });
      const releaseAt = sentAt + 400;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, releaseAt - Date.now())));
      await locker.query("COMMIT");
      const answered = await Promise.all(arrivals);
      expect(answered.map((each) => each.outcome)).to.deep.equal(answered.map(() => "ResourceExhausted"));
      for (const each of answered) expect(each.answeredAfterMs).to.be.below(400);
      const counts = await load;
      counts.set("ResourceExhausted", (counts.get("ResourceExhausted") ?? 0) + answered.length);
      await expectShedOnly(counts, client, health.statuses);
      expectAlive(replicas.processes[0]!);
    } finally {
      await locker.end();
      health.stop();
      client.close();
      await replicas.stop();
    }
  });
});
