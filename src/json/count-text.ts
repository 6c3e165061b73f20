/**
 * A count as messages write it, with thousands separated by commas ("16,777,216"). Whole numbers
 * below 10^21 only (rounded). `toLocaleString` does the same, but its first call in a process
 * loads locale data for milliseconds, on the path of a check that already ran out of time.
 */
export function countText(count: number): string {
  return Math.round(count)
    .toString()
    .replace(/\B(?=(?:\d{3})+$)/g, ",");
}
