import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { ExecutionState, type Execution, type WatchExecutionsResponse } from "../../gen/toolruntime/v1/execution_pb.js";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const as = (name: string, signal?: AbortSignal) => ({
  headers: { authorization: `Bearer ${name}-token` },
  ...(signal ? { signal } : {}),
});
const identities: IdentityConfig[] = ["alice", "bob"].map((name) => ({
  name,
  tokenSha256: [sha256(`${name}-token`)],
  grants: [{ actions: ["read", "execute", "approve"], patterns: ["test.*", "builtin.*"] }],
}));

/** Heartbeats this often on the test server, so a test sees one without waiting long. */
const heartbeatIntervalMs = 200;

for (const stackName of clientStackNames) {
  describe(`ExecutionService.WatchExecutions over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer({ identities, executions: { heartbeatIntervalMs } });
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    /** Opens a watch as `who`; `next()` gives the next message, `record()` the next record (heartbeats skipped). */
    function watch(who: string, toolName = "") {
      const abort = new AbortController();
      const stream = client.executions.watchExecutions({ toolName }, as(who, abort.signal));
      const iterator = stream[Symbol.asyncIterator]();
      const next = async (): Promise<WatchExecutionsResponse> => {
        const item = await iterator.next();
        if (item.done) throw new Error("the stream ended");
        return item.value;
      };
      const record = async (): Promise<Execution> => {
        for (;;) {
          const message = await next();
          if (message.execution) return message.execution;
          expect(message.caughtUp, "only the first message is the marker").to.equal(false);
        }
      };
      return { next, record, close: () => abort.abort() };
    }

    it("starts with caught_up, then streams a new run's record when it starts, awaits approval and ends", async () => {
      const feed = watch("alice", "test.approval");
      try {
        const first = await feed.next();
        expect(first.caughtUp).to.equal(true);
        expect(first.execution).to.equal(undefined);
        const started = await client.executions.startExecution({ toolName: "test.approval", inputs: {} }, as("alice"));
        const id = started.execution!.executionId;
        let record = await feed.record();
        expect(record.executionId).to.equal(id);
        expect(record.caller).to.equal("alice");
        while (record.state !== ExecutionState.AWAITING_APPROVAL) record = await feed.record();
        const seenSequence = record.lastSequence;
        await client.executions.rejectExecution(
          { executionId: id, inputsDigest: started.execution!.inputsDigest, comment: "no" },
          as("bob"),
        );
        while (record.state === ExecutionState.AWAITING_APPROVAL || record.state === ExecutionState.RUNNING) {
          record = await feed.record();
          expect(record.executionId).to.equal(id);
        }
        expect(record.state).to.equal(ExecutionState.FAILED);
        expect(record.result?.error?.errorType).to.equal("ApprovalRejectedError");
        expect(record.approval).to.deep.include({ approved: false, decidedBy: "bob", comment: "no" });
        expect(record.lastSequence > seenSequence).to.equal(true);
      } finally {
        feed.close();
      }
    });

    it("streams only the runs the caller may see, and only of the tool asked for", async () => {
      const bobs = watch("bob");
      const countdowns = watch("alice", "builtin.countdown");
      try {
        expect((await bobs.next()).caughtUp).to.equal(true);
        expect((await countdowns.next()).caughtUp).to.equal(true);
        const alices = await client.executions.startExecution({ toolName: "test.approval", inputs: {} }, as("alice"));
        const own = await client.executions.startExecution({ toolName: "test.approval", inputs: {} }, as("bob"));
        const seen = await bobs.record();
        expect(seen.executionId).to.equal(own.execution!.executionId);
        const countdown = await client.executions.startExecution(
          { toolName: "builtin.countdown", inputs: { from: 1, interval_ms: 0 } },
          as("alice"),
        );
        const counted = await countdowns.record();
        expect(counted.executionId).to.equal(countdown.execution!.executionId);
        for (const run of [alices, own]) {
          await client.executions.cancelExecution(
            { executionId: run.execution!.executionId },
            as(run.execution!.caller),
          );
        }
      } finally {
        bobs.close();
        countdowns.close();
      }
    });

    it("sends an empty message as a heartbeat while nothing happens", async () => {
      const feed = watch("alice", "test.no_such_tool");
      try {
        expect((await feed.next()).caughtUp).to.equal(true);
        const heartbeat = await feed.next();
        expect(heartbeat.caughtUp).to.equal(false);
        expect(heartbeat.execution).to.equal(undefined);
      } finally {
        feed.close();
      }
    });

    it("refuses an invalid tool name with INVALID_ARGUMENT before the first message", async () => {
      const feed = watch("alice", "Not A Name");
      await expectToolError(feed.next(), Code.InvalidArgument, "InvalidRequestError", "tool name");
    });
  });
}
