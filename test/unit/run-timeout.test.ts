import { expect } from "chai";
import { performance } from "node:perf_hooks";
import { ToolRunner } from "../../src/runner/tool-runner.js";
import { createToolRuntime } from "../../src/runtime.js";
import { defineTool } from "../../src/tools/define-tool.js";

/** Keeps the thread busy for `ms` milliseconds, as a handler doing synchronous work does. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe("A run's timeout", () => {
  const runtime = createToolRuntime({
    tools: [
      defineTool({
        name: "demo.busy_then_waits",
        description: "Works 300 ms synchronously, then waits forever.",
        handler: () => {
          busyFor(300);
          return new Promise(() => undefined);
        },
      }),
      defineTool({
        name: "demo.waits",
        description: "Waits forever.",
        handler: () => new Promise(() => undefined),
      }),
      defineTool({
        name: "demo.busy_then_resolves",
        description: "Works 300 ms synchronously, then returns a resolved promise.",
        handler: () => {
          busyFor(300);
          return Promise.resolve({ done: true });
        },
      }),
      defineTool({
        name: "demo.busy_then_returns",
        description: "Works 300 ms synchronously, then returns.",
        handler: () => {
          busyFor(300);
          return { done: true };
        },
      }),
    ],
  });
  after(() => runtime.close());

  it("counts from the handler's call, though its timer is armed once the handler returned a promise", async () => {
    const runner = new ToolRunner("timed", runtime.registries.default);
    runner.activate("demo.busy_then_waits");
    const { result } = await runner.execute("demo.busy_then_waits", {}, { timeoutMs: 200 });
    expect(result.success).to.equal(false);
    expect(result.error?.errorType).to.equal("TimeoutError");
    expect(result.error?.details).to.contain("timed out after 200 ms");
    // Counted from the arming, it would end 200 ms after the 300 ms of work: 500 ms at least.
    expect(result.durationMs).to.be.at.least(300).and.below(450);
  });

  it("ends a handler that returns a value after its timeout with a TimeoutError: what it returns late is discarded", async () => {
    const runner = new ToolRunner("timed", runtime.registries.default);
    runner.activate("demo.busy_then_returns");
    const { result } = await runner.execute("demo.busy_then_returns", {}, { timeoutMs: 200 });
    expect(result.success).to.equal(false);
    expect(result.error?.errorType).to.equal("TimeoutError");
    expect(result.error?.details).to.contain("timed out after 200 ms");
    expect(result.output).to.deep.equal({});
    expect(result.durationMs).to.be.at.least(300);
  });

  it("ends an async handler that blocked past its timeout before settling with a TimeoutError", async () => {
    const runner = new ToolRunner("timed", runtime.registries.default);
    runner.activate("demo.busy_then_resolves");
    const { result } = await runner.execute("demo.busy_then_resolves", {}, { timeoutMs: 200 });
    expect(result.success).to.equal(false);
    expect(result.error?.errorType).to.equal("TimeoutError");
    expect(result.output).to.deep.equal({});
  });

  it("never ends a run as timed out before its timeout: its duration is at least the timeout", async () => {
    const runner = new ToolRunner("timed", runtime.registries.default);
    runner.activate("demo.waits");
    // Ten timeouts, each on a timer of its own: Node's timers may fire early by up to a millisecond.
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, index) => runner.execute("demo.waits", {}, { timeoutMs: 21 + index })),
    );
    for (const [index, { result }] of results.entries()) {
      expect(result.error?.errorType).to.equal("TimeoutError");
      expect(result.durationMs).to.be.at.least(21 + index);
    }
  });

  it("lets a handler that returns within its timeout end as it returned", async () => {
    const runner = new ToolRunner("timed", runtime.registries.default);
    runner.activate("demo.busy_then_returns");
    const { result } = await runner.execute("demo.busy_then_returns", {}, { timeoutMs: 2_000 });
    expect(result.success).to.equal(true);
    expect(result.output).to.deep.equal({ done: true });
  });
});
