/**
 * A contiguous range of names in code unit order: every name not less than `from` and, when `to`
 * is given, less than `to`. A listing walks only the ranges it is given (see
 * ToolRegistry.list), so names outside them cost nothing.
 */
export interface NameRange {
  readonly from: string;
  /** Exclusive end; undefined for no end. */
  readonly to?: string | undefined;
}

/** Every name. */
export const allNames: readonly NameRange[] = [{ from: "" }];

/** The names that start with `prefix` ("" for every name). */
export function rangeOfPrefix(prefix: string): NameRange {
  return { from: prefix, to: successorOfPrefix(prefix) };
}

/** The one name `name`. */
export function rangeOfName(name: string): NameRange {
  // The least string greater than `name` is `name` followed by the code unit 0.
  return { from: name, to: `${name}\u0000` };
}

/** Whether `name` is in `range`. */
export function isInRange(range: NameRange, name: string): boolean {
  return name >= range.from && (range.to === undefined || name < range.to);
}

/** The same names as `ranges`, as ranges in ascending order that neither overlap nor touch, none empty. */
export function normalizeRanges(ranges: readonly NameRange[]): NameRange[] {
  const sorted = ranges.filter((range) => !isEmpty(range)).sort((a, b) => compare(a.from, b.from));
  const merged: NameRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last && (last.to === undefined || range.from <= last.to)) {
      merged[merged.length - 1] = { from: last.from, to: laterEnd(last.to, range.to) };
    } else {
      merged.push(range);
    }
  }
  return merged;
}

/** The names in both `a` and `b` (each normalized), normalized. */
export function intersectRanges(a: readonly NameRange[], b: readonly NameRange[]): NameRange[] {
  const result: NameRange[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const left = a[i] as NameRange;
    const right = b[j] as NameRange;
    const from = left.from > right.from ? left.from : right.from;
    const to = earlierEnd(left.to, right.to);
    if (to === undefined || from < to) result.push({ from, to });
    // The range that ends first can meet nothing further on the other side.
    if (to === left.to) i++;
    else j++;
  }
  return result;
}

/** Index of the first range of `ranges` (normalized) that holds a name not less than `name`; the count when none does. */
export function firstRangeReaching(ranges: readonly NameRange[], name: string): number {
  let low = 0;
  let high = ranges.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const to = (ranges[middle] as NameRange).to;
    if (to !== undefined && to <= name) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The least string greater than every string that starts with `prefix`: its last code unit below
 * 0xFFFF incremented, what follows dropped. Undefined (no end) for "" or a prefix of only 0xFFFF.
 */
function successorOfPrefix(prefix: string): string | undefined {
  for (let index = prefix.length - 1; index >= 0; index--) {
    const unit = prefix.charCodeAt(index);
    if (unit < 0xffff) return prefix.slice(0, index) + String.fromCharCode(unit + 1);
  }
  return undefined;
}

function isEmpty(range: NameRange): boolean {
  return range.to !== undefined && range.to <= range.from;
}

function laterEnd(a: string | undefined, b: string | undefined): string | undefined {
  return a === undefined || b === undefined ? undefined : a > b ? a : b;
}

function earlierEnd(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a < b ? a : b;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
