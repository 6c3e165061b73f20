/** The largest time a Date holds, in ms either side of 1970. */
const maxTime = 8.64e15;

/** The second whose text {@link isoTime} holds, and that text as bytes ("…T10:00:00.000Z"). */
let cachedSecond = Number.NaN;
const text = Buffer.alloc(32);
let textLength = 0;
/**
 * The milliseconds of the last two texts made, and those texts: runs that start or end within one
 * share it. Two, because a run that ended after a wait asks for its start then its end, and the
 * runs ending together mostly started together too: with one, every such run made both anew.
 */
let lastWhole = Number.NaN;
let lastText = "";
let previousWhole = Number.NaN;
let previousText = "";

/**
 * `new Date(ms).toISOString()`, cheaper: every result's metadata records when its run started and
 * finished, and `toISOString` costs about a microsecond a call. Times within the same second share
 * the text up to the milliseconds, kept as bytes; only the three digits of the milliseconds are
 * written, and the string is read off the bytes in one piece (joining strings instead gives a
 * tree of string nodes that a retained result would hold: about 200 bytes more per time).
 * Throws the same RangeError for a time that is not valid.
 */
export function isoTime(ms: number): string {
  // A Date truncates its time value to whole milliseconds, towards zero.
  const whole = Math.trunc(ms);
  // A result's start and end, and the runs of a busy server, mostly fall in one millisecond: one
  // string for all of them (each retained result holds two).
  if (whole === lastWhole) return lastText;
  if (whole === previousWhole) return previousText;
  // Out of a Date's range (or NaN): toISOString throws its RangeError.
  if (!(whole >= -maxTime && whole <= maxTime)) return new Date(ms).toISOString();
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    textLength = text.write(new Date(second * 1000).toISOString(), "latin1");
    cachedSecond = second;
  }
  const millis = whole - second * 1000;
  // The text ends with the milliseconds and "Z".
  const at = textLength - 4;
  text[at] = 48 + Math.floor(millis / 100);
  text[at + 1] = 48 + (Math.floor(millis / 10) % 10);
  text[at + 2] = 48 + (millis % 10);
  previousWhole = lastWhole;
  previousText = lastText;
  lastText = text.toString("latin1", 0, textLength);
  lastWhole = whole;
  return lastText;
}
