import type { JsonObject } from "@bufbuild/protobuf";
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
}
