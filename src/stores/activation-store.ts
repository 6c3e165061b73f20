import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import type { MaybePromise } from "../async/maybe-promise.js";

/**
 * Which tools are active in which named runners, behind a port. ExecuteTool requires the tool to
 * be active in its runner; with a shared store an activation made through any replica holds on
 * every replica. Runners' local state is the view: {@link sync} brings one activation in line
 * with the store before a run checks it.
 */
export interface ActivationStore {
  /**
   * Activates a tool in a runner (see ToolRunner.activate for the checks and their codes);
   * UNAVAILABLE when a shared store cannot be reached.
   */
  activate(runnerName: string, toolName: string): Promise<{ spec: ToolSpec; alreadyActive: boolean }>;
  /** Deactivates a tool in a runner; resolves to whether it was active. */
  deactivate(runnerName: string, toolName: string): Promise<boolean>;
  /** Brings this process's view of one activation in line with the store. */
  sync(runnerName: string, toolName: string): MaybePromise<void>;
}
