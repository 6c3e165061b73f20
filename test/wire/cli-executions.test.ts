import { expect } from "chai";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import { Writable } from "node:stream";
import { commandNames, runCli } from "../../src/cli/run-cli.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

const identities: IdentityConfig[] = [
  {
    name: "operator",
    tokenSha256: [sha256("operator-token")],
    grants: [{ actions: ["read", "execute", "execute_unsafe"], patterns: ["*"] }],
  },
  { name: "approver", tokenSha256: [sha256("approver-token")], grants: [{ actions: ["admin"], patterns: ["*"] }] },
];

interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface Started {
  /** Resolves once stdout matches `pattern`. */
  readonly waitFor: (pattern: RegExp) => Promise<void>;
  /** Resolves when the process exits. */
  readonly done: Promise<Finished>;
}

/**
 * Starts `node dist/src/cli/bin.js ARGS` (or, with `terminal`, the same under `script`, which gives
 * it a pseudo-terminal as stdin and stdout) with `input` on its stdin.
 */
function start(args: readonly string[], options: { token?: string; input?: string; terminal?: boolean } = {}): Started {
  const env = { ...process.env, TOOLRUNTIME_ADDRESS: "", TOOLRUNTIME_TOKEN: options.token ?? "" };
  const command = [process.execPath, "dist/src/cli/bin.js", ...args];
  const child =
    options.terminal === true
      ? spawn("script", ["-qefc", command.map(shellQuote).join(" "), "/dev/null"], { env })
      : spawn(command[0] ?? "", command.slice(1), { env });
  let stdout = "";
  let stderr = "";
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const waiter of waiters.filter((candidate) => candidate.pattern.test(stdout))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, "exit");
  child.stdin.end(options.input ?? "");
  return {
    waitFor: (pattern) =>
      pattern.test(stdout) ? Promise.resolve() : new Promise((resolve) => waiters.push({ pattern, resolve })),
    done: exited.then(([code]) => ({ code: code as number | null, stdout, stderr })),
  };
}

/** {@link start}, then waits for the process to exit. */
function bin(
  args: readonly string[],
  options: { token?: string; input?: string; terminal?: boolean } = {},
): Promise<Finished> {
  return start(args, options).done;
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** The lines of `text` as JSON objects. */
function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A stdout or stderr for in-process runs of the client that keeps what is written. */
class Collected extends Writable {
  text = "";
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

type ExecutionJson = Record<string, unknown> & { executionId: string; state: string; inputsDigest: string };

describe("The toolruntime client's executions commands (dist/src/cli/bin.js)", function () {
  // Each case starts several client processes, a second or two each on a loaded machine.
  this.timeout(90_000);
  let server: RunningServer;
  let address: string;
  const operator = (args: readonly string[], input?: string): Promise<Finished> =>
    bin([...args, "--address", address], { token: "operator-token", ...(input === undefined ? {} : { input }) });
  const approver = (args: readonly string[], options: { input?: string; terminal?: boolean } = {}): Promise<Finished> =>
    bin([...args, "--address", address], { token: "approver-token", ...options });

  /** Starts `tool` with `run --detach` and returns the record printed. */
  async function detach(tool: string, inputs: object, extra: readonly string[] = []): Promise<ExecutionJson> {
    const started = await operator(["run", tool, "--detach", "--input", JSON.stringify(inputs), ...extra]);
    expect(started.code, started.stderr).to.equal(0);
    const [line, ...rest] = jsonLines(started.stdout);
    expect(rest).to.deep.equal([]);
    return line?.["execution"] as ExecutionJson;
  }

  before(async () => {
    server = await startTestServer({ identities });
    address = server.grpcAddress;
  });
  after(async () => {
    await server.close(0);
  });

  it("run --detach prints the StartExecutionResponse; watch, get and list then follow that run", async () => {
    const execution = await detach("builtin.echo", { text: "hi" });
    expect(execution.state).to.be.oneOf(["EXECUTION_STATE_QUEUED", "EXECUTION_STATE_RUNNING"]);
    expect(execution.caller).to.equal("operator");

    const watched = await operator(["executions", "watch", execution.executionId]);
    expect(watched.code, watched.stderr).to.equal(0);
    const events = jsonLines(watched.stdout);
    expect(events.map((event) => event["sequence"])).to.deep.equal(events.map((_, index) => String(index + 1)));
    const completed = events.at(-1)?.["completed"] as { result: { success: boolean; output: unknown } };
    expect(completed.result).to.include({ success: true });
    expect(completed.result.output).to.deep.equal({ echo: { text: "hi" } });

    const resumed = await operator([
      "executions",
      "watch",
      execution.executionId,
      "--after-sequence",
      String(events.length - 1),
    ]);
    expect(resumed.code).to.equal(0);
    expect(jsonLines(resumed.stdout).map((event) => event["sequence"])).to.deep.equal([String(events.length)]);

    const got = await operator(["executions", "get", execution.executionId]);
    expect(got.code, got.stderr).to.equal(0);
    const [record] = jsonLines(got.stdout) as [{ execution: ExecutionJson; inputs: unknown }];
    expect(record.execution).to.include({ executionId: execution.executionId, state: "EXECUTION_STATE_SUCCEEDED" });
    expect(record.inputs).to.deep.equal({ text: "hi" });

    const listed = await operator(["executions", "list", "--tool", "builtin.echo", "--state", "SUCCEEDED"]);
    expect(listed.code, listed.stderr).to.equal(0);
    const ids = jsonLines(listed.stdout).map((line) => line["executionId"]);
    expect(ids).to.include(execution.executionId);
    const limited = await operator(["executions", "list", "--limit", "1"]);
    expect(jsonLines(limited.stdout)).to.have.length(1);
  });

  it("run --idempotency-key attaches a second start to the first run", async () => {
    const key = `key-${Date.now()}`;
    const first = await detach("builtin.echo", { n: 1 }, ["--idempotency-key", key]);
    const again = await operator(["run", "builtin.echo", "--detach", "--input", '{"n":1}', "--idempotency-key", key]);
    expect(again.code, again.stderr).to.equal(0);
    const [response] = jsonLines(again.stdout) as [{ execution: ExecutionJson; deduplicated: boolean }];
    expect(response.deduplicated).to.equal(true);
    expect(response.execution.executionId).to.equal(first.executionId);
    expect(response.execution.idempotencyKey).to.equal(key);
  });

  it("run refuses an unsafe tool with FAILED_PRECONDITION and a hint, and runs it with --acknowledge-unsafe", async () => {
    const refused = await operator(["run", "test.unsafe"]);
    expect(refused.code).to.equal(3);
    expect(refused.stdout).to.equal("");
    expect(refused.stderr).to.contain(
      `RunTool on "${address}" failed with FAILED_PRECONDITION: tool "test.unsafe" is flagged unsafe`,
    );
    expect(refused.stderr).to.contain("error type: UnsafeNotAcknowledgedError");
    expect(refused.stderr).to.contain("hint: pass --acknowledge-unsafe to run a tool flagged unsafe");

    const acknowledged = await operator(["run", "test.unsafe", "--acknowledge-unsafe"]);
    expect(acknowledged.code, acknowledged.stderr).to.equal(0);
    const completed = jsonLines(acknowledged.stdout).at(-1)?.["completed"] as { result: { success: boolean } };
    expect(completed.result.success).to.equal(true);
  });

  it("approve shows the tool, caller, inputs and full digest, needs --yes off a terminal, and approves", async () => {
    const execution = await detach("test.approval", { path: "/tmp/report", force: true });
    expect(execution.state).to.equal("EXECUTION_STATE_AWAITING_APPROVAL");

    const unconfirmed = await approver(["executions", "approve", execution.executionId]);
    expect(unconfirmed.code).to.equal(2);
    expect(unconfirmed.stderr).to.equal(
      'toolruntime: "toolruntime executions approve" asks for confirmation on a terminal, and stdin is not one: pass --yes to approve without asking\n',
    );

    const approved = await approver(["executions", "approve", execution.executionId, "--yes", "--comment", "ok"]);
    expect(approved.code, approved.stderr).to.equal(0);
    expect(approved.stderr).to.contain(`  execution  ${execution.executionId}\n`);
    expect(approved.stderr).to.contain("  tool       test.approval (writes)\n");
    expect(approved.stderr).to.contain("  caller     operator\n");
    expect(approved.stderr).to.contain('    "path": "/tmp/report",\n');
    expect(approved.stderr).to.contain(`  digest     ${execution.inputsDigest}\n`);
    expect(execution.inputsDigest).to.match(/^[0-9a-f]{64}$/);
    const [record] = jsonLines(approved.stdout) as [ExecutionJson & { approval: Record<string, unknown> }];
    expect(record.approval).to.include({ approved: true, decidedBy: "approver", comment: "ok" });

    const watched = await operator(["executions", "watch", execution.executionId]);
    expect(watched.code, watched.stderr).to.equal(0);

    const again = await approver(["executions", "approve", execution.executionId, "--yes"]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain(
      `toolruntime: execution "${execution.executionId}" is not awaiting approval (it is succeeded): nothing was sent\n`,
    );
  });

  it("approve asks on a terminal: anything but yes sends nothing (exit 4), yes approves", async () => {
    const execution = await detach("test.approval", { step: 1 });
    const declined = await approver(["executions", "approve", execution.executionId], { terminal: true, input: "n\n" });
    expect(declined.code, declined.stdout).to.equal(4);
    expect(declined.stdout).to.contain(`approve execution "${execution.executionId}" of "test.approval"? [y/N]`);
    expect(declined.stdout).to.contain("toolruntime: not approved; nothing was sent");
    const still = await operator(["executions", "get", execution.executionId]);
    expect((jsonLines(still.stdout)[0]?.["execution"] as ExecutionJson).state).to.equal(
      "EXECUTION_STATE_AWAITING_APPROVAL",
    );

    const accepted = await approver(["executions", "approve", execution.executionId], {
      terminal: true,
      input: "yes\n",
    });
    expect(accepted.code, accepted.stdout).to.equal(0);
    expect(accepted.stdout).to.contain(`  digest     ${execution.inputsDigest}`);
    expect(accepted.stdout).to.contain(`approved by approver: ${execution.executionId} is`);
  });

  it("reject ends the run with ApprovalRejectedError; watch then exits 1", async () => {
    const execution = await detach("test.approval", {});
    const rejected = await approver(["executions", "reject", execution.executionId, "-y", "--comment", "no"]);
    expect(rejected.code, rejected.stderr).to.equal(0);
    const [record] = jsonLines(rejected.stdout) as [ExecutionJson & { approval: Record<string, unknown> }];
    // protobuf JSON leaves out a false bool: a rejection has no "approved".
    expect(record.approval).to.deep.include({ decidedBy: "approver", comment: "no" });
    expect(record.approval).to.not.have.property("approved");
    const watched = await operator(["executions", "watch", execution.executionId]);
    expect(watched.code).to.equal(1);
    const completed = jsonLines(watched.stdout).at(-1)?.["completed"] as { result: { error: { errorType: string } } };
    expect(completed.result.error.errorType).to.equal("ApprovalRejectedError");
  });

  it("approve with a --digest that is not the run's is INVALID_ARGUMENT from the server (exit 3)", async () => {
    const execution = await detach("test.approval", { a: 1 });
    const wrong = "0".repeat(64);
    const refused = await approver(["executions", "approve", execution.executionId, "--yes", "--digest", wrong]);
    expect(refused.code).to.equal(3);
    expect(refused.stderr).to.contain(`  digest     ${wrong}\n`);
    expect(refused.stderr).to.contain(`ApproveExecution on "${address}" failed with INVALID_ARGUMENT`);
    await approver(["executions", "reject", execution.executionId, "--yes"]);
  });

  it("cancel cancels a running run and prints its record; a finished run's cancel is FAILED_PRECONDITION", async () => {
    const execution = await detach("test.wait_for_cancel", {});
    const watch = start(["executions", "watch", execution.executionId, "--address", address], {
      token: "operator-token",
    });
    await watch.waitFor(/"progress"/);
    const aborted = once(testToolEvents, "aborted") as Promise<[string, string]>;
    const cancelled = await operator(["executions", "cancel", execution.executionId]);
    expect(cancelled.code, cancelled.stderr).to.equal(0);
    expect(jsonLines(cancelled.stdout)[0]).to.include({ executionId: execution.executionId });
    expect((await aborted)[0]).to.equal(execution.executionId);
    const watched = await watch.done;
    expect(watched.code).to.equal(1);
    const completed = jsonLines(watched.stdout).at(-1)?.["completed"] as { result: { error: { errorType: string } } };
    expect(completed.result.error.errorType).to.equal("CancelledError");

    const done = await detach("builtin.noop", {});
    await operator(["executions", "watch", done.executionId]);
    const refused = await operator(["executions", "cancel", done.executionId]);
    expect(refused.code).to.equal(3);
    expect(refused.stderr).to.contain(`CancelExecution on "${address}" failed with FAILED_PRECONDITION`);
  });

  it("exits 3 with NOT_FOUND for an unknown id and 2 for a missing id or a bad --state", async () => {
    const unknown = await operator(["executions", "get", "00000000-0000-0000-0000-000000000000"]);
    expect(unknown.code).to.equal(3);
    expect(unknown.stderr).to.contain("failed with NOT_FOUND");
    const missing = await operator(["executions", "watch"]);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.contain('missing execution id: write "toolruntime executions watch ID"');
    const badState = await operator(["executions", "list", "--state", "done"]);
    expect(badState.code).to.equal(2);
    expect(badState.stderr).to.equal(
      'toolruntime: --state "done" is invalid: use one of queued, awaiting_approval, running, succeeded, failed, cancelled\n',
    );
    const noSubcommand = await operator(["executions", "purge"]);
    expect(noSubcommand.code).to.equal(2);
    expect(noSubcommand.stderr).to.contain('unknown subcommand "purge" of "toolruntime executions"');
  });

  it("documents every command and flag in --help and every command in the README", async () => {
    const readme = await readFile("README.md", "utf8");
    for (const name of commandNames()) {
      const stdout = new Collected();
      const code = await runCli([...name.split(" "), "--help"], { stdout, stderr: new Collected(), env: {} });
      expect(code).to.equal(0);
      expect(stdout.text).to.contain(`usage: toolruntime ${name}`);
      const optionLines = stdout.text.split("\n").filter((line) => /^ {2}(-[a-z], )?--/.test(line));
      expect(optionLines.length, name).to.be.greaterThan(0);
      expect(
        optionLines.every((line) => line.includes("default: ")),
        stdout.text,
      ).to.equal(true);
      expect(readme, name).to.contain(`npx toolruntime ${name}`);
    }
    const run = await bin(["help", "run"]);
    expect(run.stdout).to.contain("--acknowledge-unsafe").and.contain("--idempotency-key KEY").and.contain("--detach");
    const top = await bin(["--help"]);
    expect(top.stdout).to.contain("executions list").and.contain("approve ID");
  });
});
