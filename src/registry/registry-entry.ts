import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { markUnchanging } from "../codec/fast-binary.js";
import { echoStructFieldsOf } from "../codec/struct-echo.js";
import type { SchemaCheck } from "../json/schema-validator.js";
import { lazySchemaCheck } from "./lazy-schema-check.js";
import type { SpecPacker } from "./spec-packer.js";
import type { PackingJob } from "./spec-packing-worker.js";
import type { CheckpointHooks, RegisteredTool, ToolHandler } from "./tool-definition.js";

// A spec's schemas are never changed once decoded (a registry's specs are shared with every
// reader): RegisterTool answers with the spec, and GetTool with one just unpacked, by copying the
// schemas' bytes as they were read rather than encoding them again.
echoStructFieldsOf(ToolSpecSchema);

/** How many packed entries keep their unpacked spec at once, across every registry (about 2 KB each). */
const unpackedCapacity = 2048;

/**
 * A tool as a {@link ToolRegistry} holds it: the spec and, when this process serves the tool, its
 * handler and hooks. The schema checks are made when read (they compile on first use), so an
 * entry holds no closure.
 *
 * A large registry packs the specs of tools it has no handler for (see SpecPacker and
 * BackgroundPacking): the entry then keeps the packed form, its name, tool type and `has_handler`
 * (which listings filter on), and its spec only while it is among the latest
 * {@link unpackedCapacity} entries unpacked. Reading the spec of another unpacks it, so that two
 * reads may give two equal objects rather than the same.
 */
export class RegistryEntry implements RegisteredTool {
  /** Packed entries holding their spec, oldest first in a ring; the oldest forgets it to make room. */
  static readonly #unpacked: (RegistryEntry | undefined)[] = new Array<RegistryEntry | undefined>(unpackedCapacity);
  static #next = 0;

  readonly name: string;
  readonly toolType: string;
  /** The spec's `has_handler`: whether some process (this one or another replica) serves the tool. */
  readonly hasHandler: boolean;
  #spec: ToolSpec | undefined;
  #packed: string | undefined;
  readonly #packer: SpecPacker | undefined;

  /** @param packer given, {@link pack} can pack the spec (unless there is a handler: such tools are few and run here) */
  constructor(
    spec: ToolSpec,
    readonly handler: ToolHandler | undefined = undefined,
    readonly hooks: CheckpointHooks | undefined = undefined,
    packer: SpecPacker | undefined = undefined,
  ) {
    this.name = spec.name;
    this.toolType = spec.toolType;
    this.hasHandler = spec.hasHandler;
    this.#spec = spec;
    this.#packer = packer;
    // A tool served here runs here: every run's DISCOVERED event carries its spec, which never
    // changes (a registry's specs are shared with every reader), so its encoding is kept. Not for
    // every registered spec: RegisterTool's response encodes each once, and 100,000 kept
    // encodings would double what the registry holds until its specs are packed.
    if (handler) markUnchanging(ToolSpecSchema, spec);
  }

  /** Packs the spec and lets go of it, if it has a packer and no handler; returns whether it did. */
  pack(): boolean {
    if (!this.packable) return false;
    this.#packed = (this.#packer as SpecPacker).pack(this.#spec as ToolSpec);
    this.#spec = undefined;
    return true;
  }

  /** What packing the spec on the packing thread needs, if {@link pack} would pack it. */
  packingJob(): PackingJob | undefined {
    return this.packable ? (this.#packer as SpecPacker).jobFor(this.#spec as ToolSpec) : undefined;
  }

  /** Takes the packed form of this entry's {@link packingJob}, unless packed meanwhile; lets go of the spec. */
  adoptPacked(packed: string): void {
    if (!this.packable) return;
    this.#packed = packed;
    this.#spec = undefined;
  }

  /** The same tool with another handler (or none), unpacked, with this one's packer. */
  withHandler(handler: ToolHandler | undefined, hooks: CheckpointHooks | undefined): RegistryEntry {
    return new RegistryEntry(this.spec, handler, hooks, this.#packer);
  }

  get spec(): ToolSpec {
    if (this.#spec) return this.#spec;
    const spec = (this.#packer as SpecPacker).unpack(this.#packed as string);
    this.#spec = spec;
    RegistryEntry.#keepUnpacked(this);
    return spec;
  }

  /** Whether the spec is held packed (see the class comment), and whether it can be. */
  get packed(): boolean {
    return this.#packed !== undefined;
  }

  get packable(): boolean {
    return this.#packed === undefined && this.#packer !== undefined && this.handler === undefined;
  }

  get checkInputs(): SchemaCheck | undefined {
    return lazySchemaCheck(this.spec.inputSchema);
  }

  get checkOutput(): SchemaCheck | undefined {
    return lazySchemaCheck(this.spec.outputSchema);
  }

  static #keepUnpacked(entry: RegistryEntry): void {
    const slot = RegistryEntry.#next;
    const evicted = RegistryEntry.#unpacked[slot];
    // An entry may hold several slots; it forgets its spec when the oldest of them comes round.
    if (evicted && evicted !== entry) evicted.#spec = undefined;
    RegistryEntry.#unpacked[slot] = entry;
    RegistryEntry.#next = (slot + 1) % unpackedCapacity;
  }
}
