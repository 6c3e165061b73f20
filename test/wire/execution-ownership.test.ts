import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { ExecutionState, type Execution } from "../../gen/toolruntime/v1/execution_pb.js";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { collect, expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const as = (name: string) => ({ headers: { authorization: `Bearer ${name}-token` } });
const user = (name: string, extra: IdentityConfig["grants"] = []): IdentityConfig => ({
  name,
  tokenSha256: [sha256(`${name}-token`)],
  grants: [{ actions: ["read", "execute", "approve"], patterns: ["test.*", "builtin.*"] }, ...extra],
});

const identities: IdentityConfig[] = [
  user("alice"),
  user("bob"),
  user("auditor", [{ actions: ["executions.read_all"], patterns: ["test.*"] }]),
  { name: "root", tokenSha256: [sha256("root-token")], grants: [{ actions: ["admin"], patterns: ["*"] }] },
];

for (const stackName of clientStackNames) {
  describe(`Execution ownership over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer({ identities });
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    const start = async (who: string, toolName: string): Promise<Execution> => {
      const response = await client.executions.startExecution({ toolName, inputs: {} }, as(who));
      return response.execution as Execution;
    };

    it("records the identity that started a run as its caller", async () => {
      const run = await start("alice", "test.approval");
      expect(run.caller).to.equal("alice");
      const read = await client.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(read.execution?.caller).to.equal("alice");
      await client.executions.rejectExecution(
        { executionId: run.executionId, inputsDigest: run.inputsDigest },
        as("alice"),
      );
    });

    it("refuses another identity reading, watching or cancelling a run with PERMISSION_DENIED", async () => {
      const run = await start("alice", "test.approval");
      const expected = `identity "bob" may not read execution "${run.executionId}", which another identity started: grant it "executions.read_all" on a pattern matching tool "test.approval"`;
      const denied = await expectToolError(
        client.executions.getExecution({ executionId: run.executionId }, as("bob")),
        Code.PermissionDenied,
        "PermissionDeniedError",
      );
      expect(denied.details).to.equal(expected);
      expect(denied.toolName).to.equal("test.approval");
      await expectToolError(
        collect(client.executions.watchExecution({ executionId: run.executionId }, as("bob"))),
        Code.PermissionDenied,
        "PermissionDeniedError",
        expected,
      );
      await expectToolError(
        client.executions.cancelExecution({ executionId: run.executionId }, as("bob")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        `identity "bob" may not cancel execution "${run.executionId}", which another identity started: grant it "executions.cancel_all"`,
      );
      const stillWaiting = await client.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(stillWaiting.execution?.state).to.equal(ExecutionState.AWAITING_APPROVAL);
      await client.executions.cancelExecution({ executionId: run.executionId }, as("alice"));
    });

    it("lets executions.read_all read but not cancel, and admin do both", async () => {
      const run = await start("alice", "test.approval");
      const read = await client.executions.getExecution({ executionId: run.executionId }, as("auditor"));
      expect(read.execution?.executionId).to.equal(run.executionId);
      await expectToolError(
        client.executions.cancelExecution({ executionId: run.executionId }, as("auditor")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        '"executions.cancel_all"',
      );
      await client.executions.cancelExecution({ executionId: run.executionId }, as("root"));
      await collect(client.executions.watchExecution({ executionId: run.executionId }, as("root")));
      const ended = await client.executions.getExecution({ executionId: run.executionId }, as("auditor"));
      expect(ended.execution?.state).to.equal(ExecutionState.CANCELLED);
    });

    it("lists only the runs the caller may see, in full pages", async () => {
      const tool = "builtin.echo";
      const bobs: string[] = [];
      for (let index = 0; index < 3; index++) {
        bobs.push((await start("bob", tool)).executionId);
        await start("alice", tool);
        await start("alice", tool);
      }
      const seen: string[] = [];
      let pageToken = "";
      for (let page = 0; page < 5; page++) {
        const response = await client.executions.listExecutions({ toolName: tool, pageSize: 2, pageToken }, as("bob"));
        expect(response.executions.length, `page ${page}`).to.equal(response.nextPageToken === "" ? 1 : 2);
        seen.push(...response.executions.map((execution) => execution.executionId));
        expect(response.executions.every((execution) => execution.caller === "bob")).to.equal(true);
        pageToken = response.nextPageToken;
        if (pageToken === "") break;
      }
      expect(seen).to.deep.equal([...bobs].reverse());
      const rootView = await client.executions.listExecutions({ toolName: tool, pageSize: 100 }, as("root"));
      expect(rootView.executions.filter((execution) => execution.caller === "alice")).to.have.length(6);
    });

    it("refuses the identity that started a run its approval, and lets another approve it", async () => {
      const run = await start("alice", "test.approval");
      await expectToolError(
        client.executions.approveExecution(
          { executionId: run.executionId, inputsDigest: run.inputsDigest },
          as("alice"),
        ),
        Code.PermissionDenied,
        "PermissionDeniedError",
        `identity "alice" started execution "${run.executionId}" and may not approve it: another identity with "approve" must decide, or the server must allow self-approval`,
      );
      const approved = await client.executions.approveExecution(
        { executionId: run.executionId, inputsDigest: run.inputsDigest },
        as("bob"),
      );
      expect(approved.execution?.approval?.decidedBy).to.equal("bob");
      const events = await collect(client.executions.watchExecution({ executionId: run.executionId }, as("alice")));
      const last = events.at(-1)?.event?.event;
      expect(last?.case).to.equal("completed");
      expect(last?.case === "completed" ? last.value.result?.success : undefined).to.equal(true);
    });

    it("lets the identity that started a run reject it", async () => {
      const run = await start("alice", "test.approval");
      const rejected = await client.executions.rejectExecution(
        { executionId: run.executionId, inputsDigest: run.inputsDigest },
        as("alice"),
      );
      expect(rejected.execution?.approval?.approved).to.equal(false);
    });
  });
}

describe("Self-approval when the server allows it", () => {
  let server: RunningServer;
  let client: ClientStack;

  before(async () => {
    server = await startTestServer({ identities, allowSelfApproval: true });
    client = createClientStack("grpc-js", server);
  });
  after(async () => {
    client.close();
    await server.close(0);
  });

  it("lets the identity that started a run approve it", async () => {
    const run = (await client.executions.startExecution({ toolName: "test.approval", inputs: {} }, as("alice")))
      .execution as Execution;
    const approved = await client.executions.approveExecution(
      { executionId: run.executionId, inputsDigest: run.inputsDigest },
      as("alice"),
    );
    expect(approved.execution?.approval?.decidedBy).to.equal("alice");
  });
});
