/** A value, or a promise of it: what a memory store answers at once and a shared one later. */
export type MaybePromise<T> = T | Promise<T>;
