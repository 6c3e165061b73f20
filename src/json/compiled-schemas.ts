import type { JsonObject } from "@bufbuild/protobuf";

/**
 * Checks a JSON value against a compiled schema; returns the problems found, empty when valid.
 * `sizeBytes` is the size of the value's JSON, which bounds the work the check may take (measured
 * when not given); past that work it throws a `CheckBudgetExceededError`.
 */
export type SchemaCheck = (value: unknown, sizeBytes?: number) => string[];

/** A compiled schema held by a {@link CompiledSchemas}; `check` is undefined once its generation ended. */
export interface CompiledSlot {
  check: SchemaCheck | undefined;
}

/** Compiles with one compiler instance; throws for a schema that cannot be compiled. */
export type SchemaCompiler = (schema: JsonObject) => SchemaCheck;

/**
 * Compiled schemas shared by content (their JSON text), in generations: a generation compiles at
 * most `capacity` schemas (failed attempts included), then its slots are emptied and a fresh
 * compiler starts. A whole generation goes at once because ajv keeps every schema it compiled,
 * and the code made for it, for as long as its instance lives: dropping one validator would not
 * free it, dropping the instance does.
 */
export class CompiledSchemas {
  #slots = new Map<string, CompiledSlot>();
  #compile: SchemaCompiler;
  #attempts = 0;
  #generation = 0;

  /**
   * @param capacity most compilations per generation
   * @param newCompiler makes the compiler of a generation
   */
  constructor(
    readonly capacity: number,
    private readonly newCompiler: () => SchemaCompiler,
  ) {
    this.#compile = newCompiler();
  }

  /** Number of schemas compiled in the current generation. */
  get size(): number {
    return this.#slots.size;
  }

  /** Number of generations that ended. */
  get generation(): number {
    return this.#generation;
  }

  /** Whether the schema of that JSON text is compiled in the current generation. */
  has(json: string): boolean {
    return this.#slots.has(json);
  }

  /**
   * The compiled slot of `schema`, whose JSON text is `json`, compiling it when the current
   * generation has not. Throws what the compiler throws (nothing is kept then).
   */
  slot(schema: JsonObject, json: string): CompiledSlot {
    const found = this.#slots.get(json);
    if (found) return found;
    if (this.#attempts >= this.capacity) this.#retire();
    this.#attempts++;
    const slot: CompiledSlot = { check: this.#compile(schema) };
    this.#slots.set(json, slot);
    return slot;
  }

  #retire(): void {
    for (const slot of this.#slots.values()) slot.check = undefined;
    this.#slots = new Map();
    this.#compile = this.newCompiler();
    this.#attempts = 0;
    this.#generation++;
  }
}
