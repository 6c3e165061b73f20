import type { JsonValue } from "@bufbuild/protobuf";
import { cancellationOfSignal, type Cancellation, type CancellationView } from "../async/cancellation.js";
import type { ProgressReport, ToolContext } from "../registry/tool-definition.js";

/** What a handler's calls on its context do: the run's methods (see execute-tool.ts). */
export interface HandlerContextActions {
  reportProgress(report: ProgressReport): void;
  log(level: Parameters<ToolContext["log"]>[0], message: string): void;
  emitOutput(chunk: JsonValue): void;
}

let signalOf: (context: HandlerContext) => AbortSignal;
let ownCancellation: (context: ToolContext) => Cancellation | undefined;

/**
 * The run's cancellation behind a context, for the built-in tools: listening to it costs a field,
 * where the context's `signal` costs an AbortSignal (an EventTarget with two Maps, about 0.77 KB
 * and a few microseconds to make and to listen to) for every run in flight. A context made
 * elsewhere (a test's) is read through its `signal`.
 */
export function cancellationOf(context: ToolContext): CancellationView {
  return ownCancellation(context) ?? cancellationOfSignal(context.signal);
}

/**
 * Its `signal` is an own, enumerable accessor, as it was on the object literal this replaces, so
 * that a handler may spread or destructure its context; the getter, one function for every
 * context, makes the AbortSignal only when the handler reads it.
 */
const signalProperty: PropertyDescriptor = {
  enumerable: true,
  get(this: HandlerContext): AbortSignal {
    return signalOf(this);
  },
};

/**
 * The {@link ToolContext} a handler is called with. A literal with `get signal() {…}` made a new
 * getter function for every run, and V8 keeps an accessor's functions in the object's hidden
 * class: every context got a hidden class of its own, in dictionary mode (about 0.46 KB more per
 * run in flight, and property reads that no inline cache could keep). Contexts made here share
 * one hidden class. Its methods are the run's, bound to it, so that they work detached from the
 * context (`const { log } = context`). Binding costs about 10 ns a method; an accessor defined on
 * each context costs ten times that, so only `signal`, which must stay lazy, is one.
 */
export class HandlerContext implements ToolContext {
  static {
    signalOf = (context) => context.#cancellation.signal;
    ownCancellation = (context) => (#cancellation in context ? context.#cancellation : undefined);
  }

  readonly #cancellation: Cancellation;
  declare readonly signal: AbortSignal;
  readonly executionId: string;
  readonly toolName: string;
  readonly deadline: Date;
  readonly reportProgress: HandlerContextActions["reportProgress"];
  readonly log: HandlerContextActions["log"];
  readonly emitOutput: HandlerContextActions["emitOutput"];

  constructor(
    cancellation: Cancellation,
    run: { readonly executionId: string; readonly toolName: string; readonly deadline: Date },
    actions: HandlerContextActions,
  ) {
    this.#cancellation = cancellation;
    this.executionId = run.executionId;
    this.toolName = run.toolName;
    this.deadline = run.deadline;
    this.reportProgress = actions.reportProgress.bind(actions);
    this.log = actions.log.bind(actions);
    this.emitOutput = actions.emitOutput.bind(actions);
    Object.defineProperty(this, "signal", signalProperty);
  }
}
