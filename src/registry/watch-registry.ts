import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, invalidRequest, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { EventQueue } from "../runner/event-queue.js";
import type { ToolChange } from "./change-log.js";
import { quote } from "./names.js";
import type { ToolRegistry } from "./tool-registry.js";

/** One message of a watch: a tool of the snapshot, a marker, or a change. */
export interface WatchItem {
  readonly kind: "snapshot" | "snapshot_end" | "added" | "updated" | "removed" | "heartbeat";
  readonly spec?: ToolSpec | undefined;
  readonly version: bigint;
}

/** Options of {@link watchRegistry}. */
export interface WatchOptions {
  /** 0n for a snapshot first; otherwise the last version seen, to resume after it. */
  readonly fromVersion: bigint;
  /** Ends the watch. */
  readonly signal: AbortSignal;
  /** Interval between heartbeats while nothing changes, in milliseconds. Default 15,000. */
  readonly heartbeatIntervalMs?: number | undefined;
  /** Most changes queued for a slow reader before the watch ends. Default 10,000. */
  readonly maxLag?: number | undefined;
  /**
   * The changes after a version as the store retains them, for a resume from further back than
   * the registry's own log (a shared store keeps every replica's). Default: the registry's log.
   */
  readonly history?: ((version: bigint) => Promise<ToolChange[] | undefined> | ToolChange[] | undefined) | undefined;
}

/**
 * Streams a registry: its tools (or the changes after `fromVersion`), then each change as it
 * happens. Throws before the first item: INVALID_ARGUMENT for a version newer than the registry's,
 * OUT_OF_RANGE when the changes after it are no longer retained. Throws RESOURCE_EXHAUSTED when the
 * reader falls more than `maxLag` changes behind. Ends quietly when the signal aborts.
 */
export async function* watchRegistry(registry: ToolRegistry, options: WatchOptions): AsyncGenerator<WatchItem> {
  const current = registry.version;
  if (options.fromVersion > current) {
    throw invalidRequest(
      `from_version ${options.fromVersion} is newer than registry ${quote(registry.name)}, which is at version ${current}: resume from a version you received`,
    );
  }
  // Subscribe before reading the snapshot so that no change falls between the two.
  const queue = new EventQueue<ToolChange | "heartbeat">();
  const maxLag = options.maxLag ?? 10_000;
  let fellBehind = false;
  const unsubscribe = registry.subscribe(
    (change) => {
      if (queue.length >= maxLag) {
        fellBehind = true;
        queue.end();
      } else {
        queue.push(change);
      }
    },
    // The registry was reloaded from its store: the changes in between are not known one by one.
    () => {
      fellBehind = true;
      queue.end();
    },
  );
  const stop = (): void => queue.end();
  options.signal.addEventListener("abort", stop, { once: true });
  let lastChangeAt = Date.now();
  const heartbeatMs = options.heartbeatIntervalMs ?? 15_000;
  const heartbeat = setInterval(() => {
    if (Date.now() - lastChangeAt >= heartbeatMs) queue.push("heartbeat");
  }, heartbeatMs);
  try {
    let version: bigint;
    if (options.fromVersion === 0n) {
      const snapshot = registry.snapshot();
      version = snapshot.version;
      for (const tool of snapshot.tools) yield { kind: "snapshot", spec: tool.spec, version };
      yield { kind: "snapshot_end", version };
    } else {
      const missed = options.history
        ? await options.history(options.fromVersion)
        : registry.changesSince(options.fromVersion);
      if (!missed) {
        throw new ToolRuntimeError(
          "OUT_OF_RANGE",
          ErrorType.OutOfRange,
          `changes of registry ${quote(registry.name)} after version ${options.fromVersion} are no longer retained: watch from 0 for a fresh snapshot`,
        );
      }
      version = options.fromVersion;
      for (const change of missed) {
        if (change.version <= version) continue;
        version = change.version;
        yield { kind: change.kind, spec: change.spec, version };
      }
    }
    for await (const item of queue) {
      if (item === "heartbeat") {
        yield { kind: "heartbeat", version };
        continue;
      }
      if (item.version <= version) continue; // already part of the snapshot or the replay
      version = item.version;
      lastChangeAt = Date.now();
      yield { kind: item.kind, spec: item.spec, version };
    }
    if (fellBehind) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `watcher of registry ${quote(registry.name)} fell more than ${maxLag} changes behind: watch again with from_version ${version}`,
      );
    }
  } finally {
    clearInterval(heartbeat);
    unsubscribe();
    options.signal.removeEventListener("abort", stop);
  }
}
