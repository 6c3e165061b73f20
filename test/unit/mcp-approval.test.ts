import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { anonymousAdmin, type Identity } from "../../src/auth/permissions.js";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import {
  approvalElicitation,
  declaresFormElicitation,
  mayApproveOwnRun,
  readApprovalAnswer,
} from "../../src/server/mcp/mcp-approval.js";
import {
  parseApprovalRequestId,
  parseRequestState,
  toApprovalRequestId,
  toRequestState,
} from "../../src/server/mcp/mcp-approval-tokens.js";
import { codeOfHttpStatus, codeOfJsonRpcError, methodLabel } from "../../src/server/mcp/mcp-request-outcome.js";
import { newSessionId, sessionAnswersElicitation } from "../../src/server/mcp/mcp-session-id.js";

const digest = "ab".repeat(32);
const executionId = "0b6f4c1e-8f0a-4c59-9d55-3a1f8e2b7c10";

describe("MCP approval questions", () => {
  describe("approvalElicitation()", () => {
    it("names the tool, the run and the digest, and asks for a decision and an optional comment", () => {
      const asked = approvalElicitation("fs.delete", executionId, digest, { path: "/tmp/x" });
      expect(asked.message).to.equal(
        `Tool "fs.delete" requires human approval before it runs. Approve run ${executionId} (inputs digest ${digest}) with inputs {"path":"/tmp/x"}?`,
      );
      expect(asked.requestedSchema.required).to.deep.equal(["decision"]);
      expect(asked.requestedSchema.properties["decision"]).to.deep.include({ enum: ["approve", "reject"] });
      expect(asked.requestedSchema.properties["comment"]).to.deep.include({ type: "string", maxLength: 1024 });
    });

    it("shows at most 512 characters of the inputs", () => {
      const asked = approvalElicitation("fs.write", executionId, digest, { text: "x".repeat(2000) });
      const shown = /with inputs (.*)\?$/.exec(asked.message)?.[1] ?? "";
      expect(shown).to.have.length(513);
      expect(shown.endsWith("…")).to.equal(true);
    });
  });

  describe("readApprovalAnswer()", () => {
    it("approves only on accept with decision approve", () => {
      expect(readApprovalAnswer({ action: "accept", content: { decision: "approve", comment: "ok" } })).to.deep.equal({
        approved: true,
        comment: "ok",
      });
      expect(readApprovalAnswer({ action: "accept", content: { decision: "reject" } })).to.deep.equal({
        approved: false,
        comment: "",
      });
    });

    it("rejects on decline, cancel and an accept without a valid decision, saying so when no comment came", () => {
      expect(readApprovalAnswer({ action: "decline" })).to.deep.equal({
        approved: false,
        comment: "declined in the MCP client",
      });
      expect(readApprovalAnswer({ action: "cancel", content: { comment: "later" } })).to.deep.equal({
        approved: false,
        comment: "later",
      });
      expect(readApprovalAnswer({ action: "accept", content: { decision: "yes" } })).to.deep.equal({
        approved: false,
        comment: 'the MCP client accepted without a "decision"',
      });
    });

    it("reads nothing from what is no elicitation result", () => {
      for (const value of [undefined, null, "accept", [], {}, { action: "maybe" }]) {
        expect(readApprovalAnswer(value), JSON.stringify(value)).to.equal(undefined);
      }
    });
  });

  describe("declaresFormElicitation()", () => {
    it("takes elicitation.form, or a bare elicitation, as form support; url alone or nothing is not", () => {
      expect(declaresFormElicitation({ elicitation: {} })).to.equal(true);
      expect(declaresFormElicitation({ elicitation: { form: {} } })).to.equal(true);
      expect(declaresFormElicitation({ elicitation: { form: {}, url: {} } })).to.equal(true);
      expect(declaresFormElicitation({ elicitation: { url: {} } })).to.equal(false);
      expect(declaresFormElicitation({ sampling: {} })).to.equal(false);
      expect(declaresFormElicitation(undefined)).to.equal(false);
    });
  });

  describe("mayApproveOwnRun()", () => {
    const run = { id: executionId, toolName: "fs.delete", owner: "alice" };
    const alice: Identity = { name: "alice", grants: [{ actions: ["execute", "approve"], patterns: ["fs.*"] }] };
    const runner: Identity = { name: "alice", grants: [{ actions: ["execute"], patterns: ["fs.*"] }] };

    it("follows ApproveExecution's rule: approve on the tool, and self-approval allowed or the anonymous caller", () => {
      expect(mayApproveOwnRun(alice, run, true)).to.equal(true);
      expect(mayApproveOwnRun(alice, run, false)).to.equal(false);
      expect(mayApproveOwnRun(runner, run, true)).to.equal(false);
      expect(mayApproveOwnRun(anonymousAdmin, { ...run, owner: anonymousAdmin.name }, false)).to.equal(true);
    });
  });
});

describe("MCP approval tokens", () => {
  it("names a run in a request id and reads it back; other ids name nothing", () => {
    const id = toApprovalRequestId({ executionId, inputsDigest: digest });
    expect(id).to.equal(`io.toolruntime/approval:${executionId}:${digest}`);
    expect(parseApprovalRequestId(id)).to.deep.equal({ executionId, inputsDigest: digest });
    for (const other of [7, "7", "io.toolruntime/approval:", `io.toolruntime/approval:${executionId}`, `${id}:x`]) {
      expect(parseApprovalRequestId(other), String(other)).to.equal(undefined);
    }
  });

  it("carries a run, its digest, the last event forwarded and ownership in a requestState", () => {
    const state = { executionId, inputsDigest: digest, afterSequence: 3, owned: true };
    const text = toRequestState(state);
    expect(text).to.match(/^[A-Za-z0-9_-]+$/);
    expect(parseRequestState(text, "fs.delete")).to.deep.equal(state);
  });

  it("refuses a requestState it did not make with INVALID_ARGUMENT", () => {
    const forged = Buffer.from(JSON.stringify({ execution_id: executionId, inputs_digest: digest }), "utf8").toString(
      "base64url",
    );
    for (const text of ["", "not base64 json", forged]) {
      let thrown: unknown;
      try {
        parseRequestState(text, "fs.delete");
      } catch (error) {
        thrown = error;
      }
      expect(thrown, text).to.be.instanceOf(ToolRuntimeError);
      expect((thrown as ToolRuntimeError).code).to.equal("INVALID_ARGUMENT");
      expect((thrown as ToolRuntimeError).details).to.contain("requestState is not one this server gave");
    }
  });

  it("marks the session id of a client that declared form elicitation, and only that", () => {
    const asking = newSessionId({ capabilities: { elicitation: {} } });
    const silent = newSessionId({ capabilities: {} });
    expect(asking).to.match(/^[0-9a-f-]{36}\.elicitation$/);
    expect(silent).to.match(/^[0-9a-f-]{36}$/);
    expect(sessionAnswersElicitation(asking)).to.equal(true);
    expect(sessionAnswersElicitation(silent)).to.equal(false);
  });
});

describe("MCP request outcomes", () => {
  it("labels a request by its MCP method, from a bounded set", () => {
    expect(methodLabel({ jsonrpc: "2.0", id: 1, method: "tools/call" })).to.equal("tools/call");
    expect(methodLabel({ jsonrpc: "2.0", method: "notifications/cancelled" })).to.equal("notifications/cancelled");
    expect(methodLabel({ jsonrpc: "2.0", id: 1, method: "x".repeat(100) })).to.equal("(other)");
    expect(methodLabel({ jsonrpc: "2.0", id: "a", result: {} })).to.equal("(response)");
    expect(methodLabel({ jsonrpc: "2.0", id: "a", error: { code: 1 } })).to.equal("(response)");
    expect(methodLabel([{ jsonrpc: "2.0", id: 1, method: "ping" }])).to.equal("(invalid)");
    expect(methodLabel(undefined)).to.equal("(invalid)");
    expect(methodLabel({ hello: "world" })).to.equal("(invalid)");
  });

  it("maps HTTP statuses to status codes", () => {
    expect(
      [200, 202, 400, 401, 403, 404, 405, 406, 413, 429, 499, 500, 503].map((status) => codeOfHttpStatus(status)),
    ).to.deep.equal([
      0,
      0,
      Code.InvalidArgument,
      Code.Unauthenticated,
      Code.PermissionDenied,
      Code.NotFound,
      Code.Unimplemented,
      Code.InvalidArgument,
      Code.ResourceExhausted,
      Code.ResourceExhausted,
      Code.Canceled,
      Code.Internal,
      Code.Unavailable,
    ]);
  });

  it("maps JSON-RPC errors to status codes, the gateway's own code name first", () => {
    expect(codeOfJsonRpcError({ code: -32000, data: { code: "permission_denied" } })).to.equal(Code.PermissionDenied);
    expect(codeOfJsonRpcError({ code: -32602, data: { code: "not_found" } })).to.equal(Code.NotFound);
    expect(codeOfJsonRpcError({ code: -32602 })).to.equal(Code.InvalidArgument);
    expect(codeOfJsonRpcError({ code: -32700 })).to.equal(Code.InvalidArgument);
    expect(codeOfJsonRpcError({ code: -32601 })).to.equal(Code.Unimplemented);
    expect(codeOfJsonRpcError({ code: -32603 })).to.equal(Code.Internal);
    expect(codeOfJsonRpcError({ code: -32021 })).to.equal(Code.FailedPrecondition);
    expect(codeOfJsonRpcError({ code: -32000, data: { code: "no such code" } })).to.equal(Code.Unknown);
  });
});
