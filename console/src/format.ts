import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { ToolCapability } from "../../gen/toolruntime/v1/tool_pb.js";

/** Indented JSON for people. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? item.toString() : item), 2);
}

/** "RUNNING" for ExecutionState.RUNNING. */
export function stateName(state: ExecutionState): string {
  return ExecutionState[state] ?? "UNSPECIFIED";
}

/** The states a person can filter by, in lifecycle order. */
export const filterStates = [
  ExecutionState.QUEUED,
  ExecutionState.AWAITING_APPROVAL,
  ExecutionState.RUNNING,
  ExecutionState.SUCCEEDED,
  ExecutionState.FAILED,
  ExecutionState.CANCELLED,
];

/** Local time of day with milliseconds ("14:03:07.125"), for timelines. */
export function timeOfDay(timestamp: Timestamp | undefined): string {
  if (!timestamp) return "";
  const date = timestampDate(timestamp);
  return `${date.toLocaleTimeString([], { hour12: false })}.${String(date.getMilliseconds()).padStart(3, "0")}`;
}

/** Local date and time, for lists. */
export function dateTime(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toLocaleString([], { hour12: false }) : "";
}

/** ISO form of a timestamp, for `<time datetime>`. */
export function isoTime(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toISOString() : "";
}

/** "1,234 ms" or "12.3 s". */
export function duration(ms: number): string {
  return ms < 10_000 ? `${Math.round(ms).toLocaleString("en")} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The capability flags that are set, as badge labels; `warn` marks those that call for care. */
export function capabilityBadges(capabilities: ToolCapability | undefined): { label: string; warn: boolean }[] {
  if (!capabilities) return [];
  const flags: [boolean, string, boolean][] = [
    [capabilities.readOnly, "read only", false],
    [capabilities.writes, "writes", true],
    [capabilities.checkpointable, "checkpointable", false],
    [capabilities.idempotent, "idempotent", false],
    [capabilities.unsafe, "unsafe", true],
    [capabilities.humanApprovalRequired, "needs approval", true],
  ];
  return flags.filter(([set]) => set).map(([, label, warn]) => ({ label, warn }));
}

/** "1 run", "2 runs": a count with its noun, singular or plural. */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
