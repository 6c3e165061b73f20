import { create } from "@bufbuild/protobuf";
import { ToolCapabilitySchema, type ToolCapability } from "../../gen/toolruntime/v1/tool_pb.js";

/** The six flags, in the order of their bits in a key of {@link sharedCapabilities}. */
const flags = ["readOnly", "writes", "checkpointable", "idempotent", "unsafe", "humanApprovalRequired"] as const;

/** The 64 possible capability messages, made when first needed. */
const byFlags: (ToolCapability | undefined)[] = [];

/**
 * The capabilities message with the flags of `capabilities` (all false when absent), one frozen
 * instance per combination: a registry of 100,000 tools holds 64 of them at most instead of one
 * per tool. Specs a registry holds are shared with every reader and never changed; the freeze
 * makes a change a TypeError rather than a change of every tool with the same flags.
 */
export function sharedCapabilities(
  capabilities: Partial<Record<(typeof flags)[number], boolean>> | undefined,
): ToolCapability {
  let key = 0;
  for (const [bit, flag] of flags.entries()) if (capabilities?.[flag]) key |= 1 << bit;
  let shared = byFlags[key];
  if (!shared) {
    const init = Object.fromEntries(flags.map((flag, bit) => [flag, (key & (1 << bit)) !== 0]));
    shared = Object.freeze(create(ToolCapabilitySchema, init));
    byFlags[key] = shared;
  }
  return shared;
}
