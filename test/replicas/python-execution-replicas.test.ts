import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { sharedPostgres } from "../support/postgres-server.js";
import { generatePythonStubs, python, repoRoot, type RpcErrorSeen } from "../support/python-harness.js";
import { startReplicas, type Replicas } from "../support/replica-processes.js";

const execFileAsync = promisify(execFile);
const toolsModule = "dist/test/support/replica-tools.js";

/** An event as test/python/replicas_client.py reports it. */
interface EventSeen {
  readonly sequence: string;
  readonly kind: string;
  readonly attempt?: number;
  readonly error_type?: string;
  readonly result?: { success: boolean; error: { error_type: string } | null };
}

describe("Replicas on one PostgreSQL store: executions from a Python grpcio client", function () {
  this.timeout(120_000);
  let storeUrl: string;
  let replicas: Replicas;
  let stubsDir: string;

  const scenario = async <T>(name: string, params: Record<string, unknown> = {}): Promise<T> => {
    const script = path.join(repoRoot, "test/python/replicas_client.py");
    const args = [script, stubsDir, name, JSON.stringify({ addresses: replicas.grpcAddresses, ...params })];
    const { stdout } = await execFileAsync(python, args, { cwd: repoRoot, timeout: 90_000, maxBuffer: 1 << 24 });
    return JSON.parse(stdout) as T;
  };

  before(async () => {
    storeUrl = await (await sharedPostgres()).createDatabase("python_runs");
    [replicas, stubsDir] = await Promise.all([
      startReplicas(3, storeUrl, ["--tools", toolsModule, "--replica-lease-ms", "1000"]),
      mkdtemp(path.join(os.tmpdir(), "toolruntime-replica-stubs-")),
    ]);
    await generatePythonStubs(stubsDir);
  });

  after(async () => {
    await replicas?.stop();
    if (stubsDir) await rm(stubsDir, { recursive: true, force: true });
  });

  it("starts on one replica, reads on another, lists and watches live on a third, cancels through the second", async () => {
    const seen = await scenario<{
      live_kinds: string[];
      read_state: string;
      listed: string[];
      id: string;
      ended: EventSeen[];
      final_state: string;
    }>("across");
    expect(seen.live_kinds.slice(0, 2)).to.deep.equal(["discovered", "activated"]);
    expect(seen.live_kinds.at(-1)).to.equal("progress");
    expect(seen.read_state).to.equal("EXECUTION_STATE_RUNNING");
    expect(seen.listed).to.include(seen.id);
    const completed = seen.ended.at(-1);
    expect(completed?.kind).to.equal("completed");
    expect(completed?.result?.error?.error_type).to.equal("CancelledError");
    expect(seen.final_state).to.equal("EXECUTION_STATE_CANCELLED");
    expect(seen.ended.map((event) => Number(event.sequence))).to.deep.equal(seen.ended.map((_, index) => index + 1));
  });

  it("decides an approval once when two replicas are asked at the same time", async () => {
    const seen = await scenario<{ outcomes: ({ ok: true } | RpcErrorSeen)[]; ended: EventSeen[] }>("approval_once");
    const refused = seen.outcomes.filter((outcome): outcome is RpcErrorSeen => outcome.ok !== true);
    expect(refused).to.have.length(1);
    expect(refused[0]?.code).to.equal("FAILED_PRECONDITION");
    expect(refused[0]?.tool_error?.error_type).to.equal("ApprovalNotPendingError");
    expect(seen.ended.filter((event) => event.kind === "approval_decided")).to.have.length(1);
    const approved = seen.outcomes[0]?.ok === true;
    expect(seen.ended.at(-1)?.result?.success).to.equal(approved);
  });

  it("gives one run for one idempotency key used on two replicas at once", async () => {
    const seen = await scenario<{ results: { id: string; deduplicated: boolean }[] }>("idempotent_start", {
      key: "python-global-key",
    });
    expect(seen.results[0]?.id).to.equal(seen.results[1]?.id);
    expect(seen.results.map((result) => result.deduplicated).sort()).to.deep.equal([false, true]);
  });

  it("sees an idempotent run retried once elsewhere after its owner is killed, watching through a third replica", async () => {
    const owner = createGrpcJsClient(ExecutionService, replicas.grpcAddresses[0]!);
    let id: string;
    try {
      const started = await owner.client.startExecution({ toolName: "replica.idempotent", inputs: { ms: 1500 } });
      id = started.execution!.executionId;
      // Killed once its first attempt is under way (its start is stored before the handler runs).
      for await (const message of owner.client.watchExecution({ executionId: id })) {
        if (message.event?.event.case === "progress") break;
      }
    } finally {
      owner.close();
    }
    replicas.processes[0]!.child.kill("SIGKILL");
    // Only the replicas still up: the script connects to each address it is given.
    const seen = await scenario<{ events: EventSeen[]; state: string; attempts: number }>("watch_to_end", {
      addresses: replicas.grpcAddresses.slice(1),
      id,
      on: 1,
    });
    expect(
      seen.events.filter((event) => event.kind === "execution_started").map((event) => event.attempt),
    ).to.deep.equal([1, 2]);
    expect(seen.events.find((event) => event.kind === "retry_scheduled")?.error_type).to.equal("ReplicaLostError");
    expect(seen.state).to.equal("EXECUTION_STATE_SUCCEEDED");
    expect(seen.attempts).to.equal(2);
  });
});
