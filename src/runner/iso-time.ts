/** The largest time a Date holds, in ms either side of 1970. */
const maxTime = 8.64e15;

/** The second whose text {@link isoTime} holds, and that text up to the milliseconds. */
let cachedSecond = Number.NaN;
let cachedPrefix = "";

/**
 * `new Date(ms).toISOString()`, cheaper: every result's metadata records when its run started and
 * finished, and `toISOString` costs about a microsecond a call. Times within the same second share
 * the text up to the seconds ("2026-12-03T10:00:00."), so only the milliseconds are formatted.
 * Throws the same RangeError for a time that is not valid.
 */
export function isoTime(ms: number): string {
  // A Date truncates its time value to whole milliseconds, towards zero.
  const whole = Math.trunc(ms);
  // Out of a Date's range (or NaN): toISOString throws its RangeError.
  if (!(whole >= -maxTime && whole <= maxTime)) return new Date(ms).toISOString();
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    const text = new Date(second * 1000).toISOString();
    // Drops "000Z": the text always ends with the milliseconds and the zone.
    cachedPrefix = text.slice(0, -4);
    cachedSecond = second;
  }
  const millis = whole - second * 1000;
  return `${cachedPrefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
}
