import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import type { SchemaCheck } from "../json/schema-validator.js";

/** What a handler may report while it runs. */
export interface ProgressReport {
  /** Fraction done, from 0 to 1. */
  readonly fraction?: number;
  /** What the handler is doing; cut to 1,024 characters. */
  readonly message?: string;
}

/** What a handler receives besides its inputs. */
export interface ToolContext {
  /** Aborted when the run times out, is cancelled, or the server shuts down. Honour it. */
  readonly signal: AbortSignal;
  /** Identifier of this run (a UUID). */
  readonly executionId: string;
  /** Namespaced name of the tool being run. */
  readonly toolName: string;
  /** When the run times out. */
  readonly deadline: Date;
  /**
   * Reports progress to whoever watches the run. Throws a RangeError for a fraction outside 0..1;
   * does nothing once the run is over.
   */
  reportProgress(report: ProgressReport): void;
  /** Writes a log line to whoever watches the run; cut to 4,096 characters. */
  log(level: "debug" | "info" | "warn" | "error", message: string): void;
  /**
   * Emits a chunk of partial output (a JSON value) to whoever watches the run, before the result.
   * Throws a TypeError for a value that is not JSON.
   */
  emitOutput(chunk: JsonValue): void;
}

/**
 * Checkpoint and rollback of a checkpointable tool: the runner takes a checkpoint before each
 * attempt and rolls back to it when the attempt fails, times out or is cancelled.
 */
export interface CheckpointHooks {
  /** Saves what the run may change; returns a JSON value handed back to `rollback`. */
  checkpoint(inputs: JsonObject, context: { executionId: string; signal: AbortSignal }): unknown;
  /** Restores the saved state. Anything it throws is reported in the result's metadata. */
  rollback(checkpoint: unknown, inputs: JsonObject, context: { executionId: string; signal: AbortSignal }): unknown;
}

/**
 * The function that does a tool's work. It returns (or resolves to) a JSON object; anything it
 * throws or rejects with becomes a failed result.
 */
export type ToolHandler = (inputs: JsonObject, context: ToolContext) => unknown;

/** A tool as the registry holds it: its spec, its handler if this server has one, its checks. */
export interface RegisteredTool {
  /** The spec, with `has_handler` and `version` filled in. */
  readonly spec: ToolSpec;
  /** The handler, when this server can execute the tool. */
  readonly handler: ToolHandler | undefined;
  /** Checks inputs against the input schema, when the tool has one. */
  readonly checkInputs: SchemaCheck | undefined;
  /** Checks output against the output schema, when the tool has one. */
  readonly checkOutput: SchemaCheck | undefined;
  /** Checkpoint and rollback, for checkpointable tools that provide them. */
  readonly hooks: CheckpointHooks | undefined;
}
