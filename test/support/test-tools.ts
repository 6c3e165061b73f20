import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { defineTool, type DefinedTool } from "../../src/tools/define-tool.js";

/**
 * Where test tools tell the tests what happened inside the server: "waiting" (executionId) when
 * test.wait_for_cancel starts waiting, "aborted" (executionId, reason) when it sees its signal
 * abort, "late" (executionId) when test.late resolves; test.stubborn_writer emits "write"
 * (executionId, attempt, line) after each line it appends, "stopped" (executionId, attempt) when
 * its handler settles, and listens for "release" (executionId).
 */
export const testToolEvents = new EventEmitter();

/** Attempts seen by test.flaky, by execution id. */
const flakyAttempts = new Map<string, number>();

/** Attempts seen by test.stubborn_writer, by execution id. */
const writerAttempts = new Map<string, number>();

/** The file test.stubborn_writer writes: inputs.path. */
function pathOf(inputs: Record<string, unknown>): string {
  const path = inputs["path"];
  if (typeof path !== "string") throw new TypeError("inputs.path must be a file path");
  return path;
}

/**
 * The gate test.gate waits at: how many runs entered it so far, a promise of the `count`th entry,
 * and `open()`, which lets every run waiting at it return. Tests `reset()` it before use.
 */
export const testGate = (() => {
  let entered = 0;
  let open: () => void = () => undefined;
  let opened = new Promise<void>((resolve) => (open = resolve));
  let waits: { count: number; resolve: () => void }[] = [];
  return {
    get entered() {
      return entered;
    },
    /** Called by the tool: counts the entry and resolves the waits it completes. */
    enter(): Promise<void> {
      entered += 1;
      waits = waits.filter((wait) => (wait.count <= entered ? (wait.resolve(), false) : true));
      return opened;
    },
    /** Resolves once `count` runs have entered since the last reset. */
    until(count: number): Promise<void> {
      if (entered >= count) return Promise.resolve();
      return new Promise((resolve) => waits.push({ count, resolve }));
    },
    open(): void {
      open();
    },
    reset(): void {
      entered = 0;
      waits = [];
      opened = new Promise<void>((resolve) => (open = resolve));
    },
  };
})();

/** The state test.checkpointed changes and rolls back; tests read and set it. */
export const checkpointedState = { counter: 0, breakRollback: false };

/** An object whose every look at its prototype throws (`instanceof`, Array.isArray aside): a proxy. */
function unreadable(): object {
  return new Proxy(
    {},
    {
      getPrototypeOf(): never {
        throw new Error("the prototype cannot be read");
      },
    },
  );
}

/**
 * Tools that misbehave on purpose, in the "test" namespace: each exercises one way a handler can go
 * wrong. `test.bad_output` returns what its "kind" input names.
 */
export const testTools: readonly DefinedTool[] = [
  defineTool({
    name: "test.bad_output",
    description: "Returns a value that is not JSON, chosen by inputs.kind.",
    handler: (inputs) => {
      const kind = typeof inputs["kind"] === "string" ? inputs["kind"] : "";
      switch (kind) {
        case "bigint":
          return { value: 10n };
        case "cycle": {
          const node: Record<string, unknown> = { name: "loop" };
          node["self"] = node;
          return node;
        }
        case "undefined":
          return undefined;
        case "function":
          return { value: () => 1 };
        case "nan":
          return { value: Number.NaN };
        case "infinity":
          return { value: Number.POSITIVE_INFINITY };
        case "date":
          return { value: new Date(0) };
        case "string":
          return "not an object";
        case "symbol":
          return { value: Symbol("s") };
        case "huge":
          return { value: "x".repeat(5 * 1024 * 1024) };
        case "zeros":
          // About 1 MB of JSON, but 5.5 MB as a protobuf Struct: 11 bytes a number in a list.
          return { value: new Array<number>(Number(inputs["count"] ?? 500_000)).fill(0) };
        case "proto_trap":
          return unreadable();
        case "proto_trap_async":
          return Promise.resolve(unreadable());
        case "then_getter":
          return {
            get then(): never {
              throw new Error("then cannot be read");
            },
          };
        case "revoked": {
          const { proxy, revoke } = Proxy.revocable({}, {});
          revoke();
          return proxy;
        }
        default:
          return { kind };
      }
    },
  }),
  defineTool({
    name: "test.throw_string",
    description: "Throws a string.",
    handler: () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of this tool
      throw "boom";
    },
  }),
  defineTool({
    name: "test.throw_error",
    description: 'Throws an Error with inputs.message, or with inputs.repeat times "x".',
    handler: (inputs) => {
      if (typeof inputs["repeat"] === "number") throw new TypeError("x".repeat(inputs["repeat"]));
      throw new TypeError(typeof inputs["message"] === "string" ? inputs["message"] : "bad thing");
    },
  }),
  defineTool({
    name: "test.throw_unreadable",
    description: "Throws a proxy whose prototype cannot be read.",
    handler: () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of this tool
      throw unreadable();
    },
  }),
  defineTool({
    name: "test.busy",
    description: "Works inputs.ms synchronously (default 150), ignoring its timeout, then returns.",
    handler: (inputs) => {
      const until = performance.now() + Number(inputs["ms"] ?? 150);
      while (performance.now() < until);
      return { done: true };
    },
  }),
  defineTool({
    name: "test.reject_object",
    description: "Rejects with a plain object.",
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the point of this tool
    handler: () => Promise.reject({ code: 42 }),
  }),
  defineTool({
    name: "test.hang",
    description: "Never settles and ignores its signal.",
    defaultTimeoutMs: 200,
    handler: () => new Promise(() => undefined),
  }),
  defineTool({
    name: "test.late",
    description: "Ignores its signal and resolves after inputs.ms; its late result must be discarded.",
    handler: (inputs, context) =>
      new Promise((resolve) =>
        setTimeout(
          () => {
            testToolEvents.emit("late", context.executionId);
            resolve({ late: true });
          },
          Number(inputs["ms"] ?? 300),
        ),
      ),
  }),
  defineTool({
    name: "test.wait_for_cancel",
    description: "Reports progress once, then waits until its signal aborts and reports why.",
    handler: (_inputs, context) =>
      new Promise((_resolve, reject) => {
        context.reportProgress({ fraction: 0.5, message: "waiting for cancel" });
        testToolEvents.emit("waiting", context.executionId);
        context.signal.addEventListener(
          "abort",
          () => {
            testToolEvents.emit("aborted", context.executionId, String(context.signal.reason));
            reject(new Error("aborted"));
          },
          { once: true },
        );
      }),
  }),
  defineTool({
    name: "test.gate",
    description: "Enters testGate, waits until the test opens it (or its signal aborts), then returns {opened: true}.",
    handler: (_inputs, context) =>
      new Promise((resolve, reject) => {
        const onAbort = (): void => reject(new Error("aborted"));
        context.signal.addEventListener("abort", onAbort, { once: true });
        void testGate.enter().then(() => {
          context.signal.removeEventListener("abort", onAbort);
          resolve({ opened: true });
        });
      }),
  }),
  defineTool({
    name: "test.flaky",
    description: "Idempotent; fails its first inputs.fail_times attempts of each run, then returns {attempts}.",
    capabilities: { idempotent: true },
    handler: (inputs, context) => {
      const seen = (flakyAttempts.get(context.executionId) ?? 0) + 1;
      flakyAttempts.set(context.executionId, seen);
      if (seen <= Number(inputs["fail_times"] ?? 0)) throw new Error(`attempt ${seen} fails on purpose`);
      return { attempts: seen };
    },
  }),
  defineTool({
    name: "test.checkpointed",
    description: "Checkpointable: adds inputs.add to a counter, then fails when inputs.fail is true.",
    capabilities: { checkpointable: true, writes: true },
    hooks: {
      checkpoint: () => ({ counter: checkpointedState.counter }),
      rollback: (checkpoint) => {
        if (checkpointedState.breakRollback) throw new Error("the backup is gone");
        checkpointedState.counter = (checkpoint as { counter: number }).counter;
      },
    },
    handler: (inputs) => {
      checkpointedState.counter += Number(inputs["add"] ?? 1);
      if (inputs["fail"] === true) throw new Error("failed after writing");
      return { counter: checkpointedState.counter };
    },
  }),
  defineTool({
    name: "test.stubborn_writer",
    description:
      "Checkpointable and idempotent; appends lines to the file inputs.path. Its first inputs.fail_attempts (default 1) attempts of each run write a line every inputs.interval_ms until their signal aborts, then keep writing: inputs.after_abort more lines, or until released when inputs.until_released is true. Later attempts write two lines and return {attempt}.",
    capabilities: { checkpointable: true, idempotent: true, writes: true },
    hooks: {
      checkpoint: (inputs) => readFileSync(pathOf(inputs), "utf8"),
      rollback: (checkpoint, inputs) => writeFileSync(pathOf(inputs), String(checkpoint)),
    },
    handler: (inputs, context) => {
      const path = pathOf(inputs);
      const attempt = (writerAttempts.get(context.executionId) ?? 0) + 1;
      writerAttempts.set(context.executionId, attempt);
      let line = 0;
      const write = (): void => {
        line += 1;
        appendFileSync(path, `a${attempt}-${line}\n`);
        testToolEvents.emit("write", context.executionId, attempt, line);
      };
      if (attempt > Number(inputs["fail_attempts"] ?? 1)) {
        write();
        write();
        return { attempt };
      }
      return new Promise((resolve) => {
        let afterAbort = 0;
        const stop = (): void => {
          clearInterval(timer);
          testToolEvents.off("release", onRelease);
          testToolEvents.emit("stopped", context.executionId, attempt);
          resolve({ attempt });
        };
        const onRelease = (executionId: string): void => {
          if (executionId === context.executionId) stop();
        };
        testToolEvents.on("release", onRelease);
        // Ignores its signal on purpose: it only counts the lines written after the abort.
        const timer = setInterval(
          () => {
            write();
            if (!context.signal.aborted || inputs["until_released"] === true) return;
            afterAbort += 1;
            if (afterAbort >= Number(inputs["after_abort"] ?? 3)) stop();
          },
          Number(inputs["interval_ms"] ?? 5),
        );
      });
    },
  }),
  defineTool({
    name: "test.approval",
    description: "Needs a human's approval; returns {done: true}.",
    capabilities: { humanApprovalRequired: true, writes: true },
    handler: () => ({ done: true }),
  }),
  defineTool({
    name: "test.streaming",
    description: "Writes two log lines and emits two output chunks, then returns {chunks: 2}.",
    handler: (_inputs, context) => {
      context.log("info", "starting");
      context.emitOutput({ part: 1 });
      context.emitOutput("second");
      context.log("warn", "almost done");
      return { chunks: 2 };
    },
  }),
  defineTool({
    name: "test.chatty",
    description: "Writes inputs.lines log lines (default 2,000) of inputs.size characters (default 200), then returns.",
    handler: (inputs, context) => {
      const line = "x".repeat(Number(inputs["size"] ?? 200));
      const lines = Number(inputs["lines"] ?? 2000);
      for (let index = 0; index < lines; index++) context.log("info", line);
      testToolEvents.emit("chatty", context.executionId);
      return { lines };
    },
  }),
  defineTool({
    name: "test.bounded",
    description: "At most 1 run at a time and 1,000 ms per run; waits inputs.ms or until cancelled.",
    maxConcurrency: 1,
    maxTimeoutMs: 1000,
    handler: (inputs, context) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve({}), Number(inputs["ms"] ?? 0));
        context.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(new Error("aborted"));
        });
      }),
  }),
  defineTool({
    name: "test.unsafe",
    description: "Flagged unsafe; returns {}.",
    capabilities: { unsafe: true },
    handler: () => ({}),
  }),
  defineTool({
    name: "test.schema",
    description: "Checks inputs and output against schemas; returns inputs.reply as its output.",
    inputSchema: {
      type: "object",
      required: ["count"],
      properties: { count: { type: "integer", minimum: 0 }, reply: { type: "object" } },
    },
    outputSchema: { type: "object", required: ["total"], properties: { total: { type: "number" } } },
    handler: (inputs) => inputs["reply"] ?? {},
  }),
];
