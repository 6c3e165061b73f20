/** `global.gc`, which the in-process cases need: run them with `node --expose-gc`. */
export function requireGc(): () => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== "function") throw new Error("run this with node --expose-gc");
  return gc;
}

/** Heap bytes in use after two full collections: what is still reachable. */
export function reachableHeapBytes(): number {
  const gc = requireGc();
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
