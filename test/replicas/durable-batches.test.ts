import { ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import pg from "pg";
import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { ExecuteToolResponse } from "../../gen/toolruntime/v1/runner_pb.js";
import { sharedPostgres } from "../support/postgres-server.js";
import {
  replicaClients,
  startProxiedReplicas,
  type ProxiedReplicas,
  type ReplicaClients,
} from "../support/proxied-replicas.js";
import { startReplicas, type Replicas } from "../support/replica-processes.js";
import { startedAttempts, watchUntil } from "../support/run-watch.js";

// What batching changed, under real faults: runs created and ended by group writes, and
// admission slots leased to replicas in blocks.

const toolsModule = "dist/test/support/replica-tools.js";

/** Runs one query on the store at `url`. */
async function queryStore<Row extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Resolves once `check` holds, reading it every 50 ms; rejects after `timeoutMs`. */
async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("Durable runs: a replica killed between a group's commit and its answers", function () {
  this.timeout(120_000);
  let replicas: ProxiedReplicas;
  let url: string;

  before(async () => {
    const postgres = await sharedPostgres();
    url = await postgres.createDatabase("batches");
    replicas = await startProxiedReplicas(2, url, postgres.port, [
      "--tools",
      toolsModule,
      "--replica-lease-ms",
      "2000",
    ]);
  });

  after(async () => {
    await replicas.stop();
  });

  it("loses no acknowledged result and runs no writes handler twice", async () => {
    const [a, b] = replicas.clients as [ReplicaClients, ReplicaClients];
    await a.runner.activateTool({ toolName: "replica.writes" });
    await a.runner.activateTool({ toolName: "replica.idempotent" });
    // Eight runs through A, created by group writes (no key); one progress event each, then the end.
    const inputs = { ms: 400, interval_ms: 5000 };
    const calls = Array.from({ length: 8 }, (_, index) =>
      a.runner
        .executeTool({ toolName: index % 2 ? "replica.idempotent" : "replica.writes", inputs })
        .then((response: ExecuteToolResponse) => ({ ok: true as const, response }))
        .catch((error: unknown) => ({ ok: false as const, error })),
    );
    // Once every run is stored as running, the next group write of A holds ends: its answer is
    // dropped after it committed, and A is killed before it can answer from a retry.
    await eventually(
      async () =>
        (
          await queryStore<{ count: string }>(
            url,
            "SELECT count(*) FROM toolruntime.executions WHERE state = $1 AND tool_name LIKE 'replica.%'",
            [ExecutionState.RUNNING],
          )
        )[0]?.count === "8",
      "eight runs stored as running",
    );
    const dropped = replicas.proxies[0]!.dropAnswerTo("WITH input AS");
    expect(await dropped).to.equal(1);
    replicas.processes[0]!.child.kill("SIGKILL");
    const outcomes = await Promise.all(calls);
    for (const outcome of outcomes) {
      if (!outcome.ok) expect(outcome.error).to.be.instanceOf(ConnectError);
    }

    // B takes A's runs over once A's lease expires; every run ends.
    await eventually(
      async () =>
        (
          await queryStore<{ count: string }>(
            url,
            "SELECT count(*) FROM toolruntime.executions WHERE live AND tool_name LIKE 'replica.%'",
          )
        )[0]?.count === "0",
      "every run ended",
    );
    const listed = [
      ...(await b.executions.listExecutions({ toolName: "replica.writes" })).executions,
      ...(await b.executions.listExecutions({ toolName: "replica.idempotent" })).executions,
    ];
    expect(listed).to.have.length(8);
    // Every result A acknowledged is the stored one.
    const acknowledged = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.response] : []));
    for (const response of acknowledged) {
      const stored = listed.find((execution) => execution.executionId === response.executionId);
      expect(stored?.state, response.executionId).to.equal(ExecutionState.SUCCEEDED);
      expect(stored?.result?.output).to.deep.equal(response.result?.output);
    }
    // The dropped group committed ends that no caller was told of: the window was hit.
    const acknowledgedIds = new Set(acknowledged.map((response) => response.executionId));
    const endedUntold = listed.filter(
      (execution) => execution.state === ExecutionState.SUCCEEDED && !acknowledgedIds.has(execution.executionId),
    );
    expect(endedUntold.length, "runs ended in the dropped group").to.be.at.least(1);
    // No writes handler ran twice: one attempt at most, one EXECUTION_STARTED at most.
    for (const execution of listed.filter((each) => each.toolName === "replica.writes")) {
      expect(execution.attempts, execution.executionId).to.be.at.most(1);
      const events = await watchUntil(b, execution.executionId);
      expect(startedAttempts(events), execution.executionId).to.have.length.at.most(1);
      if (execution.state !== ExecutionState.SUCCEEDED) {
        expect(execution.result?.error?.errorType).to.equal("ReplicaLostError");
      }
    }
  });
});

describe("Durable runs: admission slot blocks across replicas", function () {
  this.timeout(120_000);
  const leaseMs = 2000;
  let replicas: Replicas;
  let clients: ReplicaClients[];
  let url: string;

  before(async () => {
    url = await (await sharedPostgres()).createDatabase("blocks");
    replicas = await startReplicas(2, url, [
      "--tools",
      toolsModule,
      "--replica-lease-ms",
      String(leaseMs),
      "--max-concurrent-runs",
      "2",
    ]);
    clients = replicas.grpcAddresses.map((address) => replicaClients(address));
  });

  after(async () => {
    for (const each of clients) each.close();
    await replicas.stop();
  });

  it("gives back the block of a replica killed while holding every slot within lease + half a lease", async () => {
    const [a, b] = clients as [ReplicaClients, ReplicaClients];
    // A's block takes the cluster's two slots, both in use.
    const held = await Promise.all(
      [1, 2].map(() => a.executions.startExecution({ toolName: "replica.idempotent", inputs: { ms: 60_000 } })),
    );
    for (const started of held) {
      await watchUntil(a, started.execution!.executionId, (event) => event.event.case === "executionStarted");
    }
    const blocks = await queryStore<{ slots: number }>(
      url,
      "SELECT slots FROM toolruntime.slot_blocks WHERE slots > 0",
    );
    expect(blocks.map((row) => row.slots)).to.deep.equal([2]);
    // A run started through B waits in the cluster's queue: A's block holds every slot.
    const queued = await b.executions.startExecution({ toolName: "replica.writes", inputs: { ms: 0 } });
    const id = queued.execution!.executionId;
    expect(queued.execution?.state).to.equal(ExecutionState.QUEUED);
    expect((await b.executions.getExecution({ executionId: id })).execution?.state).to.equal(ExecutionState.QUEUED);

    replicas.processes[0]!.child.kill("SIGKILL");
    const killedAt = Date.now();
    const events = await watchUntil(b, id, (event) => event.event.case === "executionStarted");
    const waitedMs = Date.now() - killedAt;
    expect(startedAttempts(events)).to.deep.equal([1]);
    // The lease expires at most a lease after the kill, and B's next poll (every 500 ms, a quarter
    // of this lease) lets the run in: lease + half a lease, plus the event's way to the watcher.
    expect(waitedMs).to.be.at.most(leaseMs * 1.5 + 300);
    const ended = await watchUntil(b, id);
    expect(ended.at(-1)?.event.case).to.equal("completed");
  });
});
