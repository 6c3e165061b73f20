import type { Clients } from "./session.js";

/** What a view is given when it is shown. */
export interface ViewContext {
  readonly clients: Clients;
  /** Aborted when the view is left (another route, a new token): it cancels the view's streams. */
  readonly signal: AbortSignal;
  /** Where the view draws itself. */
  readonly main: HTMLElement;
}

/** A view: draws itself into `context.main` for the route's parameter (a tool name, a run id, ""). */
export type View = (context: ViewContext, parameter: string) => void;
