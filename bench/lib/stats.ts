/** The median of `values` (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/**
 * The nearest-rank percentile `p` (0–100) of values already sorted in ascending order; NaN for none.
 */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** `value ÷ baseline`, or NaN when either is missing or the baseline is 0. */
export function ratio(value: number, baseline: number): number {
  return Number.isFinite(value) && Number.isFinite(baseline) && baseline !== 0 ? value / baseline : Number.NaN;
}
