import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from "@modelcontextprotocol/client";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createClientStack, type ClientStack } from "../support/client-stacks.js";
import {
  connectMcpClient,
  mcpClientLines,
  type ElicitationAnswer,
  type ElicitationAsked,
  type McpTestClient,
} from "../support/mcp-clients.js";
import { startTestServer } from "../support/test-server.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const tokenOf = (name: string): string => `${name}-token-0123456789`;
const identities: IdentityConfig[] = [
  // alice runs tools that need approval and may approve (her own runs only with self-approval).
  {
    name: "alice",
    tokenSha256: [sha256(tokenOf("alice"))],
    grants: [{ actions: ["read", "execute", "approve"], patterns: ["test.*"] }],
  },
  // bob approves others' runs.
  {
    name: "bob",
    tokenSha256: [sha256(tokenOf("bob"))],
    grants: [{ actions: ["read", "approve"], patterns: ["test.*"] }],
  },
  // carol may run and read, not approve.
  {
    name: "carol",
    tokenSha256: [sha256(tokenOf("carol"))],
    grants: [{ actions: ["read", "execute"], patterns: ["test.*"] }],
  },
];
const as = (name: string) => ({ headers: { authorization: `Bearer ${tokenOf(name)}` } });

/** The execution id and inputs digest an approval question names. */
function namedRun(asked: ElicitationAsked): { executionId: string; inputsDigest: string } {
  const match = /Approve run ([0-9a-f-]{36}) \(inputs digest ([0-9a-f]{64})\)/.exec(asked.message);
  expect(match, asked.message).to.not.equal(null);
  const [, executionId, inputsDigest] = match as unknown as [string, string, string];
  return { executionId, inputsDigest };
}

/** A client of `line` as `who`, answering each approval question with `answer` (recording the questions). */
async function answeringClient(
  line: (typeof mcpClientLines)[number],
  server: RunningServer,
  who: string,
  answer: (asked: ElicitationAsked) => Promise<ElicitationAnswer>,
): Promise<{ client: McpTestClient; asked: ElicitationAsked[] }> {
  const asked: ElicitationAsked[] = [];
  const client = await connectMcpClient(line, new URL(`${server.httpUrl}/mcp`), {
    token: tokenOf(who),
    onElicit: async (question) => {
      asked.push(question);
      return await answer(question);
    },
  });
  return { client, asked };
}

describe("MCP gateway approvals through MCP (--allow-self-approval)", () => {
  let server: RunningServer;
  let grpc: ClientStack;
  before(async () => {
    server = await startTestServer({ identities, allowSelfApproval: true });
    grpc = createClientStack("grpc-js", server);
  });
  after(async () => {
    grpc.close();
    await server.close(0);
  });

  for (const line of mcpClientLines) {
    describe(`with the ${line} client`, () => {
      it("asks the caller to approve, naming the tool, run and digest, and runs once approved (decided by the caller)", async () => {
        const { client, asked } = await answeringClient(line, server, "alice", () =>
          Promise.resolve({ action: "accept", content: { decision: "approve", comment: "ship it" } }),
        );
        try {
          const result = await client.callTool("test.approval", { line });
          expect(result.isError ?? false).to.equal(false);
          expect(result.structuredContent).to.deep.equal({ done: true });
          const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
          expect(asked).to.have.length(1);
          const question = asked[0] as ElicitationAsked;
          const { execution } = await grpc.executions.getExecution({ executionId }, as("alice"));
          expect(namedRun(question)).to.deep.equal({ executionId, inputsDigest: execution?.inputsDigest });
          expect(question.message).to.contain('Tool "test.approval" requires human approval');
          expect(question.requestedSchema?.["required"]).to.deep.equal(["decision"]);
          expect(execution?.state).to.equal(ExecutionState.SUCCEEDED);
          expect(execution?.approval).to.deep.include({ approved: true, decidedBy: "alice", comment: "ship it" });
        } finally {
          await client.close();
        }
      });

      for (const [how, answer, comment] of [
        ["a rejection", { action: "accept", content: { decision: "reject", comment: "not today" } }, "not today"],
        ["a decline", { action: "decline" }, "declined in the MCP client"],
        ["a cancel", { action: "cancel" }, "dismissed in the MCP client"],
      ] as const) {
        it(`ends the run with ApprovalRejectedError on ${how}, decided by the caller`, async () => {
          const { client } = await answeringClient(line, server, "alice", () => Promise.resolve(answer));
          try {
            const result = await client.callTool("test.approval", { line, how });
            expect(result.isError).to.equal(true);
            const error = result._meta?.["io.toolruntime/error"] as Record<string, string>;
            expect(error["error_type"]).to.equal("ApprovalRejectedError");
            const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
            const { execution } = await grpc.executions.getExecution({ executionId }, as("alice"));
            expect(execution?.state).to.equal(ExecutionState.FAILED);
            expect(execution?.approval).to.deep.include({ approved: false, decidedBy: "alice", comment });
          } finally {
            await client.close();
          }
        });
      }

      it("keeps the decision of an ApproveExecution that came before the client's answer", async () => {
        const { client } = await answeringClient(line, server, "alice", async (asked) => {
          const run = namedRun(asked);
          await grpc.executions.approveExecution({ ...run, comment: "bob was faster" }, as("bob"));
          return { action: "accept", content: { decision: "reject", comment: "too late" } };
        });
        try {
          const result = await client.callTool("test.approval", { line, race: true });
          expect(result.structuredContent).to.deep.equal({ done: true });
          const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
          const { execution } = await grpc.executions.getExecution({ executionId }, as("alice"));
          expect(execution?.state).to.equal(ExecutionState.SUCCEEDED);
          expect(execution?.approval).to.deep.include({ approved: true, decidedBy: "bob", comment: "bob was faster" });
        } finally {
          await client.close();
        }
      });

      it("asks nothing of a caller that may not approve, and waits for another identity", async () => {
        const { client, asked } = await answeringClient(line, server, "carol", () =>
          Promise.resolve({ action: "accept", content: { decision: "approve" } }),
        );
        try {
          const result = await callApprovedByBob(client, grpc, { line, caller: "carol" });
          expect(result.structuredContent).to.deep.equal({ done: true });
          expect(asked).to.have.length(0);
        } finally {
          await client.close();
        }
      });

      it("asks nothing of a client that did not declare elicitation", async () => {
        const client = await connectMcpClient(line, new URL(`${server.httpUrl}/mcp`), tokenOf("alice"));
        try {
          const result = await callApprovedByBob(client, grpc, { line, undeclared: true });
          expect(result.structuredContent).to.deep.equal({ done: true });
        } finally {
          await client.close();
        }
      });
    });
  }

  describe("a 2026-07-28 retry", () => {
    /** A v2 client pinned to 2026-07-28 that hands input_required results back instead of answering them. */
    async function manualClient(who: string): Promise<V2Client> {
      const client = new V2Client(
        { name: "manual", version: "1.0.0" },
        {
          versionNegotiation: { mode: { pin: "2026-07-28" } },
          capabilities: { elicitation: { form: {} } },
          inputRequired: { autoFulfill: false },
        },
      );
      const transport = new V2Transport(new URL(`${server.httpUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokenOf(who)}` } },
      });
      await client.connect(transport);
      return client;
    }
    const call = async (client: V2Client, params: Record<string, unknown>): Promise<Record<string, unknown>> =>
      await client.request(
        { method: "tools/call", params: { name: "test.approval", ...params } },
        { allowInputRequired: true },
      );
    const failure = async (promise: Promise<unknown>): Promise<{ code: number; data?: { code?: string } }> => {
      try {
        await promise;
      } catch (error) {
        return error as { code: number; data?: { code?: string } };
      }
      throw new Error("the retry should have been refused");
    };

    it("asks with input_required, and is held to the run its requestState names: owner, tool and inputs", async () => {
      const alice = await manualClient("alice");
      const carol = await manualClient("carol");
      try {
        const asked = await call(alice, { arguments: { n: 1 } });
        expect(asked["resultType"]).to.equal("input_required");
        const executionId = (asked["_meta"] as Record<string, string>)["io.toolruntime/execution_id"] ?? "";
        const question = (asked["inputRequests"] as Record<string, { method: string; params: ElicitationAsked }>)[
          "approval"
        ];
        expect(question?.method).to.equal("elicitation/create");
        expect(namedRun(question?.params as ElicitationAsked).executionId).to.equal(executionId);
        const requestState = asked["requestState"] as string;
        const approve = { approval: { action: "accept", content: { decision: "approve" } } };

        const byAnother = await failure(call(carol, { arguments: { n: 1 }, inputResponses: approve, requestState }));
        expect(byAnother.code).to.equal(-32000);
        expect(byAnother.data?.code).to.equal("permission_denied");
        const otherInputs = await failure(call(alice, { arguments: { n: 2 }, inputResponses: approve, requestState }));
        expect(otherInputs.code).to.equal(-32602);
        expect(otherInputs.data?.code).to.equal("invalid_argument");
        const forged = await failure(
          call(alice, { arguments: { n: 1 }, inputResponses: approve, requestState: "bm90IG1pbmU" }),
        );
        expect(forged.data?.code).to.equal("invalid_argument");
        const waiting = await grpc.executions.getExecution({ executionId }, as("alice"));
        expect(waiting.execution?.state).to.equal(ExecutionState.AWAITING_APPROVAL);

        const result = await call(alice, { arguments: { n: 1 }, inputResponses: approve, requestState });
        expect(result["structuredContent"]).to.deep.equal({ done: true });
        const { execution } = await grpc.executions.getExecution({ executionId }, as("alice"));
        expect(execution?.approval).to.deep.include({ approved: true, decidedBy: "alice" });
      } finally {
        await Promise.all([alice.close(), carol.close()]);
      }
    });
  });

  describe("a 2025-era answer in a POST of its own", () => {
    const post = (who: string | undefined, body: unknown) =>
      fetch(`${server.httpUrl}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          ...(who === undefined ? {} : { authorization: `Bearer ${tokenOf(who)}` }),
        },
        body: JSON.stringify(body),
      });
    const answerFor = (run: { executionId: string; inputsDigest: string }, result: unknown) => ({
      jsonrpc: "2.0",
      id: `io.toolruntime/approval:${run.executionId}:${run.inputsDigest}`,
      result,
    });
    const approve = { action: "accept", content: { decision: "approve", comment: "by post" } };

    it("is held to ApproveExecution's rules: refused for an identity without approve, decided for another approver", async () => {
      const { execution } = await grpc.executions.startExecution(
        { toolName: "test.approval", inputs: {} },
        as("alice"),
      );
      const run = { executionId: execution?.executionId ?? "", inputsDigest: execution?.inputsDigest ?? "" };
      const refused = await post("carol", answerFor(run, approve));
      expect(refused.status).to.equal(403);
      const body = (await refused.json()) as { error: { code: number; message: string; data: { code: string } } };
      expect(body.error.code).to.equal(-32000);
      expect(body.error.data.code).to.equal("permission_denied");
      expect(body.error.message).to.equal(
        'identity "carol" may not approve tool "test.approval": grant it "approve" on a pattern matching the name',
      );
      const waiting = await grpc.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(waiting.execution?.state).to.equal(ExecutionState.AWAITING_APPROVAL);

      const taken = await post("bob", answerFor(run, approve));
      expect(taken.status).to.equal(202);
      expect(await taken.text()).to.equal("");
      await server.runtime.executions.get(run.executionId).done;
      const decided = await grpc.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(decided.execution?.state).to.equal(ExecutionState.SUCCEEDED);
      expect(decided.execution?.approval).to.deep.include({ approved: true, decidedBy: "bob", comment: "by post" });

      // A second answer is moot: the first decision stands.
      const late = await post("alice", answerFor(run, { action: "decline" }));
      expect(late.status).to.equal(202);
      const still = await grpc.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(still.execution?.approval?.decidedBy).to.equal("bob");
    });

    it("refuses an answer sent as text/plain with 415, leaving the run to wait (a page of any origin may send one)", async () => {
      const { execution } = await grpc.executions.startExecution(
        { toolName: "test.approval", inputs: {} },
        as("alice"),
      );
      const run = { executionId: execution?.executionId ?? "", inputsDigest: execution?.inputsDigest ?? "" };
      const plain = await fetch(`${server.httpUrl}/mcp`, {
        method: "POST",
        headers: { "content-type": "text/plain", authorization: `Bearer ${tokenOf("bob")}` },
        body: JSON.stringify(answerFor(run, approve)),
      });
      expect(plain.status).to.equal(415);
      const waiting = await grpc.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(waiting.execution?.state).to.equal(ExecutionState.AWAITING_APPROVAL);
      await grpc.executions.cancelExecution({ executionId: run.executionId }, as("alice"));
    });

    it("decides the run when the answer comes inside a batch (protocol versions before 2025-06-18)", async () => {
      const { execution } = await grpc.executions.startExecution(
        { toolName: "test.approval", inputs: {} },
        as("alice"),
      );
      const run = { executionId: execution?.executionId ?? "", inputsDigest: execution?.inputsDigest ?? "" };
      const taken = await post("bob", [answerFor(run, approve)]);
      expect(taken.status).to.equal(202);
      await server.runtime.executions.get(run.executionId).done;
      const decided = await grpc.executions.getExecution({ executionId: run.executionId }, as("alice"));
      expect(decided.execution?.state).to.equal(ExecutionState.SUCCEEDED);
      expect(decided.execution?.approval).to.deep.include({ approved: true, decidedBy: "bob" });
    });

    it("is refused with the run's digest checked, an unknown run and a result that is no elicitation result", async () => {
      const { execution } = await grpc.executions.startExecution(
        { toolName: "test.approval", inputs: { n: 1 } },
        as("alice"),
      );
      const executionId = execution?.executionId ?? "";
      const otherDigest = await post("alice", answerFor({ executionId, inputsDigest: "0".repeat(64) }, approve));
      expect(otherDigest.status).to.equal(400);
      expect(((await otherDigest.json()) as { error: { data: { code: string } } }).error.data.code).to.equal(
        "invalid_argument",
      );
      const unknown = await post(
        "alice",
        answerFor({ executionId: "no-such-run", inputsDigest: "0".repeat(64) }, approve),
      );
      expect(unknown.status).to.equal(404);
      const notAnAnswer = await post(
        "alice",
        answerFor({ executionId, inputsDigest: execution?.inputsDigest ?? "" }, {}),
      );
      expect(notAnAnswer.status).to.equal(400);
      const unauthenticated = await post(undefined, answerFor({ executionId, inputsDigest: "" }, approve));
      expect(unauthenticated.status).to.equal(401);
      await grpc.executions.cancelExecution({ executionId }, as("alice"));
    });
  });
});

describe("MCP gateway approvals without --allow-self-approval", () => {
  let server: RunningServer;
  let grpc: ClientStack;
  before(async () => {
    server = await startTestServer({ identities });
    grpc = createClientStack("grpc-js", server);
  });
  after(async () => {
    grpc.close();
    await server.close(0);
  });

  for (const line of mcpClientLines) {
    it(`sends the ${line} client no elicitation, and ApproveExecution by another identity decides`, async () => {
      const { client, asked } = await answeringClient(line, server, "alice", () =>
        Promise.resolve({ action: "accept", content: { decision: "approve" } }),
      );
      try {
        const result = await callApprovedByBob(client, grpc, { line });
        expect(result.structuredContent).to.deep.equal({ done: true });
        expect(asked).to.have.length(0);
        const executionId = result._meta?.["io.toolruntime/execution_id"] as string;
        const { execution } = await grpc.executions.getExecution({ executionId }, as("alice"));
        expect(execution?.approval).to.deep.include({ approved: true, decidedBy: "bob" });
      } finally {
        await client.close();
      }
    });
  }
});

describe("MCP gateway approvals left unanswered", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({
      identities,
      allowSelfApproval: true,
      executions: { defaultApprovalTimeoutMs: 200 },
    });
  });
  after(() => server.close(0));

  for (const line of mcpClientLines) {
    it(`leaves the run to its approval timeout while the ${line} client does not answer; a late answer changes nothing`, async () => {
      let askedRun: (run: { executionId: string; inputsDigest: string }) => void = () => undefined;
      const asked = new Promise<{ executionId: string; inputsDigest: string }>((resolve) => (askedRun = resolve));
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      const { client } = await answeringClient(line, server, "alice", async (question) => {
        askedRun(namedRun(question));
        await released;
        return { action: "accept", content: { decision: "approve" } };
      });
      try {
        const call = client.callTool("test.approval", { line });
        const { executionId } = await asked;
        const ended = await server.runtime.executions.get(executionId).done;
        expect(ended.error?.errorType).to.equal("ApprovalTimeoutError");
        release();
        const result = await call;
        expect(result.isError).to.equal(true);
        expect((result._meta?.["io.toolruntime/error"] as Record<string, string>)["error_type"]).to.equal(
          "ApprovalTimeoutError",
        );
        expect(server.runtime.executions.get(executionId).decision?.decidedBy).to.equal("(timeout)");
      } finally {
        release();
        await client.close();
      }
    });
  }
});

/** Calls test.approval and approves the run as bob once the progress announces it. */
async function callApprovedByBob(client: McpTestClient, grpc: ClientStack, args: Record<string, unknown>) {
  let announced: (message: string) => void = () => undefined;
  const announcement = new Promise<string>((resolve) => (announced = resolve));
  const call = client.callTool("test.approval", args, {
    onprogress: (report) => {
      if (report.message?.includes("awaits approval")) announced(report.message);
    },
  });
  const message = await announcement;
  const match = /execution_id "([^"]+)", inputs_digest "([0-9a-f]{64})"/.exec(message);
  expect(match, message).to.not.equal(null);
  const [, executionId, inputsDigest] = match as unknown as [string, string, string];
  await grpc.executions.approveExecution({ executionId, inputsDigest }, as("bob"));
  return await call;
}
