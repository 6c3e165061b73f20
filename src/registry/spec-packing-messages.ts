/** A batch of specs for the packing thread to deflate (see SpecPackingWorker). */
export interface PackRequest {
  /** Echoed in the reply. */
  readonly id: number;
  /** The dictionaries the batch's specs are packed against (usually one: a registry's). */
  readonly dictionaries: readonly Uint8Array[];
  /** For each spec, the index of its dictionary. */
  readonly dictionaryOf: Uint16Array;
  /** Every spec's protobuf bytes, one after the other (transferred, not copied). */
  readonly bytes: Uint8Array;
  /** Where each spec's bytes end in {@link bytes}. */
  readonly ends: Uint32Array;
}

/** The packed specs of one request, in its order. */
export interface PackReply {
  readonly id: number;
  readonly packed: string[];
}
