import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { ExecutionService, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { expectToolError } from "../support/expect-error.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { sharedPostgres } from "../support/postgres-server.js";
import { startReplicas, type Replicas } from "../support/replica-processes.js";
import { pythonReplicaScenario, pythonWatchToEnd } from "../support/python-replica-client.js";
import { spawnUntil } from "../support/spawn-until.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { completedResult, kinds, watchUntil } from "../support/run-watch.js";
import { RegistryService, ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";

const toolsModule = "dist/test/support/replica-tools.js";

/** grpc-js clients of one replica's ExecutionService and RunnerService. */
function clientsOf(address: string) {
  const executions = createGrpcJsClient(ExecutionService, address);
  const runner = createGrpcJsClient(RunnerService, address);
  return {
    executions: executions.client,
    runner: runner.client,
    close: () => {
      executions.close();
      runner.close();
    },
  };
}
type Clients = ReturnType<typeof clientsOf>;

describe("Replicas on one PostgreSQL store: executions", function () {
  this.timeout(120_000);
  let storeUrl: string;
  let replicas: Replicas;
  let clients: Clients[];

  before(async () => {
    storeUrl = await (await sharedPostgres()).createDatabase("runs");
    replicas = await startReplicas(3, storeUrl, ["--tools", toolsModule, "--replica-lease-ms", "1000"]);
    clients = replicas.grpcAddresses.map(clientsOf);
  });

  after(async () => {
    for (const each of clients ?? []) each.close();
    await replicas?.stop();
  });

  it("reads, lists, watches live and cancels through other replicas a run started on one", async () => {
    const [a, b, c] = clients as [Clients, Clients, Clients];
    const started = await a.executions.startExecution({ toolName: "replica.writes", inputs: { interval_ms: 20 } });
    const id = started.execution!.executionId;
    // Live events of a run owned by A reach a watcher on C.
    const live = await watchUntil(c, id, (event) => event.event.case === "progress");
    expect(kinds(live).slice(0, 2)).to.deep.equal(["discovered", "activated"]);
    expect((await b.executions.getExecution({ executionId: id })).execution?.state).to.equal(ExecutionState.RUNNING);
    const listed = await c.executions.listExecutions({ toolName: "replica.writes" });
    expect(listed.executions.map((execution) => execution.executionId)).to.include(id);

    const watched = watchUntil(c, id);
    const cancelled = await b.executions.cancelExecution({ executionId: id });
    expect(cancelled.execution?.executionId).to.equal(id);
    const events = await watched;
    const result = completedResult(events);
    expect(result?.success).to.equal(false);
    expect(result?.error?.errorType).to.equal("CancelledError");
    expect(result?.error?.details).to.contain("cancelled by anonymous");
    expect((await a.executions.getExecution({ executionId: id })).execution?.state).to.equal(ExecutionState.CANCELLED);
    // Gapless across the owner's batched writes: sequences 1..n.
    const all = await watchUntil(b, id);
    expect(all.map((event) => Number(event.sequence))).to.deep.equal(all.map((_, index) => index + 1));
  });

  it("follows every replica's runs in a WatchExecutions on another replica", async () => {
    const [a, , c] = clients as [Clients, Clients, Clients];
    const abort = new AbortController();
    const seen: { id: string; state: ExecutionState }[] = [];
    let caughtUp: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (caughtUp = resolve));
    let id = "";
    let ended: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (ended = resolve));
    const feed = (async () => {
      try {
        for await (const message of c.executions.watchExecutions(
          { toolName: "replica.idempotent" },
          { signal: abort.signal },
        )) {
          if (message.caughtUp) caughtUp();
          const execution = message.execution;
          if (!execution) continue;
          seen.push({ id: execution.executionId, state: execution.state });
          if (execution.executionId === id && execution.state === ExecutionState.SUCCEEDED) ended();
        }
      } catch {
        // ended by the test
      }
    })();
    await ready;
    const started = await a.executions.startExecution({ toolName: "replica.idempotent", inputs: { ms: 300 } });
    id = started.execution!.executionId;
    await finished;
    abort.abort();
    await feed;
    const states = seen.filter((each) => each.id === id).map((each) => each.state);
    expect(states.at(-1)).to.equal(ExecutionState.SUCCEEDED);
    expect(states).to.include(ExecutionState.RUNNING);
  });

  it("decides an approval once when two replicas decide at the same time", async () => {
    const [a, b, c] = clients as [Clients, Clients, Clients];
    const started = await a.executions.startExecution({ toolName: "replica.approval", inputs: { n: 1 } });
    const id = started.execution!.executionId;
    const waiting = await watchUntil(b, id, (event) => event.event.case === "awaitingApproval");
    const awaiting = waiting.at(-1)!;
    const digest = awaiting.event.case === "awaitingApproval" ? awaiting.event.value.inputsDigest : "";
    const decisions = await Promise.allSettled([
      b.executions.approveExecution({ executionId: id, inputsDigest: digest, comment: "yes" }),
      c.executions.rejectExecution({ executionId: id, inputsDigest: digest, comment: "no" }),
    ]);
    expect(decisions.filter((decision) => decision.status === "fulfilled")).to.have.length(1);
    const refused = decisions.find((decision) => decision.status === "rejected") as PromiseRejectedResult;
    await expectToolError(Promise.reject(refused.reason as Error), Code.FailedPrecondition, "ApprovalNotPendingError");
    const events = await watchUntil(a, id);
    const decided = events.filter((event) => event.event.case === "approvalDecided");
    expect(decided).to.have.length(1);
    const approved = decisions[0].status === "fulfilled";
    expect(completedResult(events)?.success).to.equal(approved);
  });

  it("treats an idempotency key as global: the same key on two replicas names one run", async () => {
    const [a, b] = clients as [Clients, Clients];
    const options = { idempotencyKey: "global-key" };
    const [first, second] = await Promise.all([
      a.executions.startExecution({ toolName: "replica.idempotent", inputs: { ms: 10 }, options }),
      b.executions.startExecution({ toolName: "replica.idempotent", inputs: { ms: 10 }, options }),
    ]);
    expect(first.execution?.executionId).to.equal(second.execution?.executionId);
    expect([first.deduplicated, second.deduplicated].sort()).to.deep.equal([false, true]);
  });

  it("runs a provider's tool on the replica holding its stream, started through another and watched through a third", async () => {
    const [a, b, c] = clients as [Clients, Clients, Clients];
    const provider = await spawnUntil(
      process.execPath,
      ["dist/test/support/replica-provider.js", replicas.grpcAddresses[1]!],
      process.cwd(),
      "connected",
    );
    try {
      const events: RunEvent[] = [];
      for await (const message of a.runner.runTool({ toolName: "remote.steps", inputs: { steps: 3 } })) {
        if (message.event) events.push(message.event);
      }
      expect(kinds(events).filter((kind) => kind === "progress")).to.have.length(3);
      const result = completedResult(events);
      expect(result?.success, JSON.stringify(result?.error)).to.equal(true);
      expect(result?.output).to.deep.equal({ pid: provider.child.pid });
      const id = events[0]!.executionId;
      expect(kinds(await watchUntil(c, id))).to.deep.equal(kinds(events));
      expect((await b.executions.getExecution({ executionId: id })).execution?.state).to.equal(
        ExecutionState.SUCCEEDED,
      );
      // A Python grpcio client on the third replica sees the same run.
      const python = await pythonWatchToEnd(replicas.grpcAddresses[2]!, id);
      expect(python.events.map((event) => event.kind)).to.include.members(["progress", "completed"]);
      expect(python.events).to.have.length(events.length);
      expect(python.state).to.equal("EXECUTION_STATE_SUCCEEDED");
    } finally {
      await provider.stop();
    }
  });

  it("keeps finished runs and their events across a restart of every replica", async () => {
    const [a] = clients as [Clients];
    const started = await a.executions.startExecution({ toolName: "replica.idempotent", inputs: { ms: 10 } });
    const id = started.execution!.executionId;
    const before = await watchUntil(a, id);
    for (const each of clients) each.close();
    await replicas.stop();
    replicas = await startReplicas(3, storeUrl, ["--tools", toolsModule, "--replica-lease-ms", "1000"]);
    clients = replicas.grpcAddresses.map(clientsOf);
    const after = await watchUntil(clients[2]!, id);
    expect(after.map((event) => event.sequence)).to.deep.equal(before.map((event) => event.sequence));
    expect((await clients[1]!.executions.getExecution({ executionId: id })).execution?.state).to.equal(
      ExecutionState.SUCCEEDED,
    );
  });
});

describe("Replicas on one PostgreSQL store: a lost owner", function () {
  this.timeout(120_000);
  let replicas: Replicas;
  let clients: Clients[];

  beforeEach(async () => {
    const storeUrl = await (await sharedPostgres()).createDatabase("lost");
    replicas = await startReplicas(3, storeUrl, ["--tools", toolsModule, "--replica-lease-ms", "1000"]);
    clients = replicas.grpcAddresses.map(clientsOf);
  });

  afterEach(async () => {
    for (const each of clients) each.close();
    for (const each of replicas.processes) if (each.child.signalCode === "SIGSTOP") each.child.kill("SIGCONT");
    await replicas.stop();
  });

  it("retries an idempotent run exactly once on another replica after its owner is killed", async () => {
    const [a, b] = clients as [Clients, Clients];
    const started = await a.executions.startExecution({
      toolName: "replica.idempotent",
      inputs: { ms: 1500, interval_ms: 50 },
    });
    const id = started.execution!.executionId;
    await watchUntil(b, id, (event) => event.event.case === "progress");
    const killedPid = replicas.processes[0]!.child.pid;
    replicas.processes[0]!.child.kill("SIGKILL");
    const events = await watchUntil(b, id);
    const starts = events.filter((event) => event.event.case === "executionStarted");
    expect(
      starts.map((event) => (event.event.case === "executionStarted" ? event.event.value.attempt : 0)),
    ).to.deep.equal([1, 2]);
    const retry = events.find((event) => event.event.case === "retryScheduled");
    expect(retry?.event.case === "retryScheduled" && retry.event.value.error?.errorType).to.equal("ReplicaLostError");
    const result = completedResult(events);
    expect(result?.success, JSON.stringify(result?.error)).to.equal(true);
    expect((result?.output as { pid: number }).pid).to.not.equal(killedPid);
    expect(events.map((event) => Number(event.sequence))).to.deep.equal(events.map((_, index) => index + 1));
    expect((await b.executions.getExecution({ executionId: id })).execution?.attempts).to.equal(2);
  });

  it("ends a writes run with ReplicaLostError, never running it twice, after its owner is killed", async () => {
    const [a, b] = clients as [Clients, Clients];
    const started = await a.executions.startExecution({ toolName: "replica.writes", inputs: { interval_ms: 50 } });
    const id = started.execution!.executionId;
    await watchUntil(b, id, (event) => event.event.case === "progress");
    replicas.processes[0]!.child.kill("SIGKILL");
    const events = await watchUntil(b, id);
    expect(events.filter((event) => event.event.case === "executionStarted")).to.have.length(1);
    const result = completedResult(events);
    expect(result?.success).to.equal(false);
    expect(result?.error?.errorType).to.equal("ReplicaLostError");
    expect((await b.executions.getExecution({ executionId: id })).execution?.state).to.equal(ExecutionState.FAILED);
    const python = await pythonWatchToEnd(replicas.grpcAddresses[2]!, id);
    expect(python.events.filter((event) => event.kind === "execution_started")).to.have.length(1);
    expect(python.events.at(-1)?.result?.error?.error_type).to.equal("ReplicaLostError");
    expect(python.state).to.equal("EXECUTION_STATE_FAILED");
  });

  it("refuses the late writes of an owner paused past its lease: no event after the end, none twice", async () => {
    const [a, b] = clients as [Clients, Clients];
    // A's own caller streams the run from A; its first event names the run.
    let named: (id: string) => void = () => undefined;
    const firstEvent = new Promise<string>((resolve) => (named = resolve));
    const stream = (async () => {
      const seen: RunEvent[] = [];
      try {
        for await (const message of a.runner.runTool({ toolName: "replica.writes", inputs: { interval_ms: 20 } })) {
          if (!message.event) continue;
          seen.push(message.event);
          named(message.event.executionId);
        }
        return { seen, error: undefined };
      } catch (error) {
        return { seen, error: error as Error };
      }
    })();
    const owner = replicas.processes[0]!.child;
    const id = await firstEvent;
    await watchUntil(b, id, (event) => event.event.case === "progress");
    owner.kill("SIGSTOP");
    const ended = await watchUntil(b, id);
    expect(completedResult(ended)?.error?.errorType).to.equal("ReplicaLostError");
    owner.kill("SIGCONT");
    const { error } = await stream;
    // A tried to write, was refused by the fence, and told its caller so.
    expect(error?.message).to.contain("lost run");
    const after = await watchUntil(b, id);
    expect(after.map((event) => event.sequence)).to.deep.equal(ended.map((event) => event.sequence));
    expect(after.filter((event) => event.event.case === "completed")).to.have.length(1);
    const python = await pythonWatchToEnd(replicas.grpcAddresses[2]!, id);
    expect(python.events.map((event) => Number(event.sequence))).to.deep.equal(
      after.map((event) => Number(event.sequence)),
    );
    expect(python.state).to.equal("EXECUTION_STATE_FAILED");
  });

  it("keeps a provider's tool while any replica serves it, withdraws a lost replica's connections, and takes the provider back elsewhere", async () => {
    const [a, b] = clients as [Clients, Clients];
    const addresses = replicas.grpcAddresses as [string, string, string];
    const proxy = await TcpProxy.start(addresses[2]);
    const registry = createGrpcJsClient(RegistryService, addresses[0]);
    const provider = (address: string) =>
      spawnUntil(process.execPath, ["dist/test/support/replica-provider.js", address], process.cwd(), "connected");
    const direct = await provider(addresses[1]);
    const proxied = await provider(proxy.address);
    const watching = new AbortController();
    try {
      // The same provider through two replicas: one tool, served by both.
      expect((await registry.client.getTool({ name: "remote.steps" })).spec?.hasHandler).to.equal(true);
      await direct.stop();
      const served = [];
      for await (const message of a.runner.runTool({ toolName: "remote.steps", inputs: { steps: 1 } })) {
        if (message.event) served.push(message.event);
      }
      expect(completedResult(served)?.output).to.deep.equal({ pid: proxied.child.pid });

      const from = (await registry.client.listTools({ pageSize: 1 })).registryVersion;
      const changes: string[] = [];
      const watched = (async () => {
        for await (const message of registry.client.watchTools({ fromVersion: from }, { signal: watching.signal })) {
          if (message.spec?.name !== "remote.steps") continue;
          changes.push(ToolChangeType[message.type]);
          if (message.type === ToolChangeType.REMOVED) proxy.retarget(addresses[0]);
          if (message.type === ToolChangeType.ADDED) return;
        }
      })();
      // The replica holding the provider's stream dies: the survivors withdraw its connections once
      // its lease expires, and the provider, reconnecting through the proxy, lands on another replica.
      replicas.processes[2]!.child.kill("SIGKILL");
      await watched;
      expect(changes).to.deep.equal(["REMOVED", "ADDED"]);
      const again = [];
      for await (const message of b.runner.runTool({ toolName: "remote.steps", inputs: { steps: 1 } })) {
        if (message.event) again.push(message.event);
      }
      expect(completedResult(again)?.output).to.deep.equal({ pid: proxied.child.pid });
    } finally {
      watching.abort();
      registry.close();
      await proxied.stop();
      await proxy.close();
    }
  });
});

describe("Replicas on one PostgreSQL store: admission across the cluster", function () {
  this.timeout(120_000);
  let replicas: Replicas;
  let clients: Clients[];

  before(async () => {
    const storeUrl = await (await sharedPostgres()).createDatabase("admission");
    replicas = await startReplicas(3, storeUrl, [
      "--tools",
      toolsModule,
      "--max-concurrent-runs",
      "2",
      "--max-queued-runs",
      "3",
    ]);
    clients = replicas.grpcAddresses.map(clientsOf);
  });

  after(async () => {
    for (const each of clients) each.close();
    await replicas.stop();
  });

  it("runs at most the cluster's limit at once, queues the rest in one bounded FIFO queue, and lets the next in", async () => {
    const ids: string[] = [];
    // Five runs through three replicas: two run, three wait, whichever replica started them.
    for (let index = 0; index < 5; index++) {
      const started = await clients[index % 3]!.executions.startExecution({
        toolName: "replica.writes",
        inputs: { interval_ms: 200 },
      });
      ids.push(started.execution!.executionId);
    }
    await expectToolError(
      clients[2]!.executions.startExecution({ toolName: "replica.writes", inputs: {} }),
      Code.ResourceExhausted,
      "ResourceExhaustedError",
      "runs already wait across the cluster",
    );
    const states = async () =>
      Promise.all(
        ids.map(async (id) => (await clients[0]!.executions.getExecution({ executionId: id })).execution!.state),
      );
    // The first two hold the slots; the queued ones say so in their events.
    const queued = await watchUntil(clients[1]!, ids[2]!, (event) => event.event.case === "queued");
    expect(queued.at(-1)?.event.case).to.equal("queued");
    await watchUntil(clients[1]!, ids[1]!, (event) => event.event.case === "executionStarted");
    expect((await states()).filter((state) => state === ExecutionState.RUNNING)).to.have.length(2);

    // A slot given back goes to the oldest waiting run, started through another replica.
    await clients[2]!.executions.cancelExecution({ executionId: ids[0]! });
    const next = await watchUntil(clients[0]!, ids[2]!, (event) => event.event.case === "executionStarted");
    expect(next.at(-1)?.event.case).to.equal("executionStarted");
    const after = await states();
    expect(after[0]).to.equal(ExecutionState.CANCELLED);
    expect(after.slice(1, 3)).to.deep.equal([ExecutionState.RUNNING, ExecutionState.RUNNING]);
    // A Python grpcio client reading through the third replica sees the same cluster-wide states.
    const python = await pythonReplicaScenario<{ states: string[] }>("states", replicas.grpcAddresses, { ids, on: 2 });
    expect(python.states.slice(0, 3)).to.deep.equal([
      "EXECUTION_STATE_CANCELLED",
      "EXECUTION_STATE_RUNNING",
      "EXECUTION_STATE_RUNNING",
    ]);
    for (const id of ids) await clients[1]!.executions.cancelExecution({ executionId: id });
  });
});
