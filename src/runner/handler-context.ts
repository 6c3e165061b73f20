import type { JsonValue } from "@bufbuild/protobuf";
import type { Cancellation } from "../async/cancellation.js";
import type { ProgressReport, ToolContext } from "../registry/tool-definition.js";

/** What a handler's calls on its context do: the run's methods (see execute-tool.ts). */
export interface HandlerContextActions {
  reportProgress(report: ProgressReport): void;
  log(level: Parameters<ToolContext["log"]>[0], message: string): void;
  emitOutput(chunk: JsonValue): void;
}

type ActionName = keyof HandlerContextActions;

let signalOf: (context: HandlerContext) => AbortSignal;
let actionOf: (context: HandlerContext, name: ActionName) => (...args: never[]) => void;

/**
 * Every member a handler reads through a getter is an own, enumerable accessor, as `signal` was on
 * the object literal this replaces, so that a handler may spread or destructure its context. The
 * getters, one function each for every context, make the AbortSignal and the methods only when the
 * handler reads them: most handlers use none, and a closure per method per run was three functions
 * and the scope they kept alive for every run in flight.
 */
const accessors: PropertyDescriptorMap = {
  reportProgress: {
    enumerable: true,
    get(this: HandlerContext) {
      return actionOf(this, "reportProgress");
    },
  },
  log: {
    enumerable: true,
    get(this: HandlerContext) {
      return actionOf(this, "log");
    },
  },
  emitOutput: {
    enumerable: true,
    get(this: HandlerContext) {
      return actionOf(this, "emitOutput");
    },
  },
  signal: {
    enumerable: true,
    get(this: HandlerContext): AbortSignal {
      return signalOf(this);
    },
  },
};

/**
 * The {@link ToolContext} a handler is called with. A literal with `get signal() {…}` made a new
 * getter function for every run, and V8 keeps an accessor's functions in the object's hidden
 * class: every context got a hidden class of its own, in dictionary mode (about 0.46 KB more per
 * run in flight, and property reads that no inline cache could keep). Contexts made here share
 * one hidden class. Its methods are the run's, bound to it when first read, so that they work
 * detached from the context (`const { log } = context`).
 */
export class HandlerContext implements ToolContext {
  static {
    signalOf = (context) => context.#cancellation.signal;
    actionOf = (context, name) => {
      const bound = (context.#bound ??= {});
      return (bound[name] ??= context.#actions[name].bind(context.#actions) as never);
    };
  }

  readonly #cancellation: Cancellation;
  readonly #actions: HandlerContextActions;
  #bound: { -readonly [name in ActionName]?: HandlerContextActions[name] } | undefined;
  declare readonly signal: AbortSignal;
  declare readonly reportProgress: HandlerContextActions["reportProgress"];
  declare readonly log: HandlerContextActions["log"];
  declare readonly emitOutput: HandlerContextActions["emitOutput"];
  readonly executionId: string;
  readonly toolName: string;
  readonly deadline: Date;

  constructor(
    cancellation: Cancellation,
    run: { readonly executionId: string; readonly toolName: string; readonly deadline: Date },
    actions: HandlerContextActions,
  ) {
    this.#cancellation = cancellation;
    this.#actions = actions;
    this.#bound = undefined;
    this.executionId = run.executionId;
    this.toolName = run.toolName;
    this.deadline = run.deadline;
    Object.defineProperties(this, accessors);
  }
}
