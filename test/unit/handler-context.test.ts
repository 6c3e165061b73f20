import { create, type JsonObject } from "@bufbuild/protobuf";
import { ExecutionOptionsSchema } from "../../gen/toolruntime/v1/execution_pb.js";
import { expect } from "chai";
import { Cancellation } from "../../src/async/cancellation.js";
import { cancellationOf, HandlerContext } from "../../src/runner/handler-context.js";
import type { ToolContext } from "../../src/registry/tool-definition.js";
import { createToolRuntime } from "../../src/runtime.js";
import { defineTool } from "../../src/tools/define-tool.js";

const noActions = { reportProgress: () => undefined, log: () => undefined, emitOutput: () => undefined };
const run = { executionId: "run-1", toolName: "demo.tool", deadline: new Date(0) };

/** Counts the reads of its AbortSignal, which Cancellation makes on the first one. */
class CountingCancellation extends Cancellation {
  reads = 0;
  override get signal(): AbortSignal {
    this.reads += 1;
    return super.signal;
  }
}

describe("HandlerContext", () => {
  it("makes its AbortSignal only when read, the same one each time, aborted with the run's reason", () => {
    const cancellation = new CountingCancellation();
    const context = new HandlerContext(cancellation, run, noActions);
    // Reading the other members makes no AbortSignal either.
    expect(context.executionId).to.equal("run-1");
    expect(context.log).to.be.a("function");
    expect(cancellation.reads, "no AbortSignal before the handler reads one").to.equal(0);
    const signal = context.signal;
    expect(cancellation.reads).to.equal(1);
    expect(signal).to.be.instanceOf(AbortSignal);
    expect(context.signal).to.equal(signal);
    const reason = new Error("cancelled: by test");
    cancellation.abort(reason);
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.equal(reason);
  });

  it("gives built-in tools the run's own cancellation, which makes no AbortSignal; another context's through its signal", () => {
    const cancellation = new CountingCancellation();
    const context = new HandlerContext(cancellation, run, noActions);
    expect(cancellationOf(context)).to.equal(cancellation);
    const heard: unknown[] = [];
    cancellationOf(context).onAbort((reason) => heard.push(reason));
    const reason = new Error("cancelled: by test");
    cancellation.abort(reason);
    expect(heard).to.deep.equal([reason]);
    expect(cancellation.reads, "no AbortSignal made").to.equal(0);

    // A context built elsewhere (a plain object, a spread copy) is heard through its signal.
    const controller = new AbortController();
    const foreign: ToolContext = { ...context, signal: controller.signal };
    const view = cancellationOf(foreign);
    expect(view).to.not.equal(cancellation);
    const foreignHeard: unknown[] = [];
    view.onAbort((why) => foreignHeard.push(why));
    const later = new Error("stopped elsewhere");
    controller.abort(later);
    expect(foreignHeard).to.deep.equal([later]);
    expect(view.aborted).to.equal(true);
  });

  it("gives the run's methods bound to the run, the same on every read", () => {
    const calls: string[] = [];
    const actions = {
      prefix: "run",
      reportProgress(this: { prefix: string }, report: { message?: string }) {
        calls.push(`${this.prefix} progress ${report.message ?? ""}`);
      },
      log(this: { prefix: string }, level: string, message: string) {
        calls.push(`${this.prefix} ${level} ${message}`);
      },
      emitOutput(this: { prefix: string }, chunk: unknown) {
        calls.push(`${this.prefix} output ${JSON.stringify(chunk)}`);
      },
    };
    const context = new HandlerContext(new Cancellation(), run, actions);
    expect(context.log).to.equal(context.log);
    const { reportProgress, log, emitOutput } = context;
    reportProgress({ message: "half" });
    log("warn", "careful");
    emitOutput({ part: 1 });
    expect(calls).to.deep.equal(["run progress half", "run warn careful", 'run output {"part":1}']);
  });

  it("spreads and destructures as the object literal it replaced did: every member, the signal included", () => {
    const logged: string[] = [];
    const context = new HandlerContext(new Cancellation(), run, {
      ...noActions,
      log: (level, message) => logged.push(`${level} ${message}`),
    });
    const copy = { ...context };
    expect(Object.keys(copy).sort()).to.deep.equal(
      ["deadline", "emitOutput", "executionId", "log", "reportProgress", "signal", "toolName"].sort(),
    );
    expect(copy.signal).to.equal(context.signal);
    const { log, executionId, toolName } = context;
    log("info", "destructured");
    expect(logged).to.deep.equal(["info destructured"]);
    expect([executionId, toolName]).to.deep.equal(["run-1", "demo.tool"]);
  });

  it("is what a handler gets: its signal aborts when the run times out, its methods work detached", async () => {
    let context: ToolContext | undefined;
    let abortedWith: (reason: unknown) => void = () => undefined;
    const aborted = new Promise<unknown>((resolve) => (abortedWith = resolve));
    const runtime = createToolRuntime({
      tools: [
        defineTool({
          name: "demo.waits",
          handler: async (_inputs, given: ToolContext): Promise<JsonObject> => {
            context = given;
            // A handler may take its context apart: the methods must not need it as `this`.
            // eslint-disable-next-line @typescript-eslint/unbound-method
            const { reportProgress, signal } = given;
            reportProgress({ fraction: 0.5, message: "half" });
            await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
            abortedWith(signal.reason);
            return {};
          },
        }),
      ],
    });
    try {
      const record = runtime.executions.start({
        runner: runtime.runners.createPrivate(),
        requireActive: false,
        toolName: "demo.waits",
        inputs: {},
        timeoutMs: 50,
        options: create(ExecutionOptionsSchema, {}),
        caller: "tester",
      }).record;
      const result = await record.done;
      expect(result.success).to.equal(false);
      expect(result.error?.errorType).to.equal("TimeoutError");
      expect(String(await aborted)).to.contain("timed out after 50 ms");
      expect(context).to.be.instanceOf(HandlerContext);
      expect(context?.toolName).to.equal("demo.waits");
      const progress = record.events.filter((event) => event.event.case === "progress");
      expect(progress).to.have.length(1);
    } finally {
      runtime.close();
    }
  });
});
