import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { pino } from "pino";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolResultSchema, ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { invalidRequest, ToolRuntimeError, ErrorType } from "../../src/errors/tool-runtime-error.js";
import { cancellationKey, McpCancellations } from "../../src/server/mcp/mcp-cancellations.js";
import { toCallToolResult } from "../../src/server/mcp/to-call-tool-result.js";
import { toMcpError } from "../../src/server/mcp/to-mcp-error.js";
import { toMcpTool } from "../../src/server/mcp/to-mcp-tool.js";
import { toProgressMessage } from "../../src/server/mcp/to-progress-message.js";

const silent = pino({ level: "silent" });

function event(body: RunEvent["event"], sequence = 5n): RunEvent {
  return create(RunEventSchema, { sequence, time: timestampNow(), executionId: "run-1", event: body });
}

describe("MCP gateway", () => {
  describe("toMcpTool()", () => {
    it("sends destructiveHint false for a tool that does not write, since MCP assumes true", () => {
      const tool = toMcpTool(create(ToolSpecSchema, { name: "a.b", version: 7n }));
      expect(tool.annotations).to.deep.equal({
        title: "a.b",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
      });
      expect(tool.inputSchema).to.deep.equal({ type: "object" });
      expect(tool).to.not.have.property("outputSchema");
      expect(tool).to.not.have.property("description");
      expect(tool._meta?.["io.toolruntime/version"]).to.equal("7");
    });
    it("adds type object to a root schema without one and keeps a typed one as it is", () => {
      const tool = toMcpTool(
        create(ToolSpecSchema, {
          name: "a.b",
          inputSchema: { properties: { x: { type: "string" } } },
          outputSchema: { type: "object", required: ["y"] },
        }),
      );
      expect(tool.inputSchema).to.deep.equal({ type: "object", properties: { x: { type: "string" } } });
      expect(tool.outputSchema).to.deep.equal({ type: "object", required: ["y"] });
    });
  });

  describe("toCallToolResult()", () => {
    it("puts a failure's type and details in the text and the whole ToolError in _meta", () => {
      const result = toCallToolResult(
        "run-1",
        create(ToolResultSchema, {
          success: false,
          error: { toolName: "a.b", errorType: "TimeoutError", details: "took too long" },
          metadata: { attempt: 1 },
        }),
      );
      expect(result).to.deep.equal({
        isError: true,
        content: [{ type: "text", text: "TimeoutError: took too long" }],
        _meta: {
          "io.toolruntime/execution_id": "run-1",
          "io.toolruntime/metadata": { attempt: 1 },
          "io.toolruntime/error": { tool_name: "a.b", error_type: "TimeoutError", details: "took too long" },
        },
      });
    });
  });

  describe("toProgressMessage()", () => {
    it("gives a percentage only when the handler reported a fraction", () => {
      expect(
        toProgressMessage(event({ case: "progress", value: { fraction: 0.25, message: "a" } } as never), "t.x"),
      ).to.equal("25% a");
      expect(toProgressMessage(event({ case: "progress", value: { message: "b" } } as never), "t.x")).to.equal("b");
      expect(toProgressMessage(event({ case: "progress", value: { message: "" } } as never), "t.x")).to.equal(
        "progress",
      );
    });
    it("skips stages, heartbeats, logs and the final events", () => {
      for (const body of [
        { case: "heartbeat", value: { elapsedMs: 1 } },
        { case: "log", value: { level: "info", message: "x" } },
        { case: "completed", value: {} },
        { case: "deactivated", value: { wasActive: true } },
      ]) {
        expect(toProgressMessage(event(body as never), "t.x")).to.equal(undefined);
      }
    });
  });

  describe("toMcpError()", () => {
    it("maps NOT_FOUND and INVALID_ARGUMENT to -32602, other refusals to -32000, with the ToolError", () => {
      const notFound = toMcpError(new ToolRuntimeError("NOT_FOUND", ErrorType.NotFound, "no tool", "a.b"), silent);
      expect(notFound.code).to.equal(-32602);
      expect(notFound.data).to.deep.equal({
        code: "not_found",
        "io.toolruntime/tool_error": { tool_name: "a.b", error_type: "NotFoundError", details: "no tool" },
      });
      expect(toMcpError(invalidRequest("bad"), silent).code).to.equal(-32602);
      const exhausted = toMcpError(
        new ToolRuntimeError("RESOURCE_EXHAUSTED", ErrorType.ResourceExhausted, "full", "a.b", 250),
        silent,
      );
      expect(exhausted.code).to.equal(-32000);
      expect(exhausted.data).to.deep.include({ code: "resource_exhausted" });
      expect((exhausted.data as Record<string, Record<string, unknown>>)["io.toolruntime/tool_error"]).to.deep.include({
        retry_after_ms: 250,
      });
    });
    it("answers a bug with -32603 and a generic message", () => {
      const error = toMcpError(new Error("secret detail"), silent);
      expect(error.code).to.equal(-32603);
      expect(error.message).to.not.contain("secret detail");
    });
  });

  describe("McpCancellations", () => {
    it("cancels only the request of the same session, caller and id, once", () => {
      const cancellations = new McpCancellations();
      const mine = cancellations.track(cancellationKey("s1", "alice", 3));
      const other = cancellations.track(cancellationKey("s2", "alice", 3));
      const text = cancellations.track(cancellationKey("s1", "alice", "3"));
      expect(cancellations.cancel(cancellationKey("s1", "alice", 3), "stop")).to.equal(true);
      expect(mine.signal.aborted).to.equal(true);
      expect((mine.signal.reason as Error).message).to.equal("stop");
      expect(other.signal.aborted).to.equal(false);
      expect(text.signal.aborted).to.equal(false);
      expect(cancellations.cancel(cancellationKey("s1", "alice", 3), "again")).to.equal(false);
      other.release();
      text.release();
      mine.release();
      expect(cancellations.size).to.equal(0);
    });
  });
});
