import type { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { ToolErrorSchema, type ToolError } from "../../gen/toolruntime/v1/tool_pb.js";

/**
 * Awaits `promise`, expects it to fail with `code`, and returns the ToolError detail it must carry,
 * after checking its error_type and that the message contains `fragment` when given.
 */
export async function expectToolError(
  promise: Promise<unknown>,
  code: Code,
  errorType: string,
  fragment?: string,
): Promise<ToolError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, "the call should have failed").to.be.instanceOf(ConnectError);
  const error = caught as ConnectError;
  expect(Code[error.code], error.rawMessage).to.equal(Code[code]);
  const [detail] = error.findDetails(ToolErrorSchema);
  expect(detail, "a ToolError detail").to.not.equal(undefined);
  const toolError = detail as ToolError;
  expect(toolError.errorType).to.equal(errorType);
  expect(toolError.details).to.equal(error.rawMessage);
  if (fragment !== undefined) expect(error.rawMessage).to.contain(fragment);
  return toolError;
}

/** Collects every message of a stream into an array. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

/** A name unique to this process run, for tools and runners that tests create. */
let counter = 0;
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}${counter}x${process.pid}`;
}

/** The ToolRuntimeError that `action` throws; fails the test when it throws nothing. */
export function thrownBy(action: () => unknown): ToolRuntimeError {
  try {
    action();
  } catch (error) {
    return error as ToolRuntimeError;
  }
  throw new Error("expected an error");
}
