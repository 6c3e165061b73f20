/** What a store operation knows of the call it serves. */
export interface StoreCall {
  /** When the call's deadline passes, in milliseconds since the epoch; undefined when it has none. */
  readonly deadline?: number | undefined;
}
