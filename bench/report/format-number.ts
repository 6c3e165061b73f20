/** A figure for a table: thousands separated above 1,000, about three significant digits below. */
export function formatFigure(value: number): string {
  if (!Number.isFinite(value)) return "–";
  const magnitude = Math.abs(value);
  if (magnitude >= 1000) return Math.round(value).toLocaleString("en-US");
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  if (magnitude === 0) return "0";
  return value.toPrecision(2);
}

/** A ratio for a table: two decimals, or two significant digits when tiny, with "×". */
export function formatRatio(value: number): string {
  if (!Number.isFinite(value)) return "–";
  const magnitude = Math.abs(value);
  const text = magnitude >= 100 ? value.toFixed(0) : magnitude >= 0.01 ? value.toFixed(2) : value.toPrecision(2);
  return `${text}×`;
}
