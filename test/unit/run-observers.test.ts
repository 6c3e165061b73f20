import { expect } from "chai";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { DeadlineExceededError } from "../../src/errors/deadline-exceeded.js";
import type { RunInfo } from "../../src/runner/run-observer.js";
import { ToolRunner } from "../../src/runner/tool-runner.js";
import { createToolRuntime } from "../../src/runtime.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";

describe("ToolRunner observers", () => {
  const runtime = createToolRuntime({ tools: builtinTools });
  after(() => runtime.close());

  it("hear the end of every run they heard start, however it ends before or after its handler", async () => {
    const heard: string[] = [];
    const runner = new ToolRunner("observed", runtime.registries.default, {
      observers: [
        {
          onRunStart: (info: RunInfo) => heard.push(`start ${info.executionId} ${info.spec.name} ${info.caller}`),
          onRunEnd: (info: RunInfo, result: ToolResult) =>
            heard.push(`end ${info.executionId} ${result.success ? "ok" : (result.error?.errorType ?? "")}`),
        },
      ],
    });
    runner.activate("builtin.echo");
    runner.activate("builtin.sleep");
    const cancelled = new AbortController();
    cancelled.abort(new Error("gone"));
    const timedOut = new AbortController();
    timedOut.abort(new DeadlineExceededError());
    await runner.execute("builtin.echo", { a: 1 }, { executionId: "ok", caller: "tester" });
    await runner.execute("builtin.sleep", { ms: "x" }, { executionId: "invalid", caller: "tester" });
    await runner.execute("builtin.echo", {}, { executionId: "cancelled", caller: "tester", signal: cancelled.signal });
    await runner.execute("builtin.echo", {}, { executionId: "late", caller: "tester", signal: timedOut.signal });
    expect(heard).to.deep.equal([
      "start ok builtin.echo tester",
      "end ok ok",
      "start invalid builtin.sleep tester",
      "end invalid InputValidationError",
      "start cancelled builtin.echo tester",
      "end cancelled CancelledError",
      "start late builtin.echo tester",
      "end late TimeoutError",
    ]);
  });
});
