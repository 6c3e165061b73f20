/** The last lines a child wrote to its stderr, bounded in lines and in bytes. */
export interface StderrTail {
  /** Adds one line (without its newline). */
  push(line: string): void;
  /** The kept lines, oldest first, joined with "\n" ("" when none). */
  text(): string;
}

/** Bounds of a {@link StderrTail}. */
export interface StderrTailLimits {
  /** Default 20. */
  readonly maxLines?: number;
  /** Default 4096, counted in UTF-8 bytes of the kept lines. */
  readonly maxBytes?: number;
}

/**
 * Keeps the last `maxLines` lines whose total stays within `maxBytes`, dropping the oldest first;
 * a single line longer than `maxBytes` keeps its end, since an error's last words matter most.
 */
export function createStderrTail(limits: StderrTailLimits = {}): StderrTail {
  const maxLines = Math.max(1, limits.maxLines ?? 20);
  const maxBytes = Math.max(1, limits.maxBytes ?? 4096);
  const lines: string[] = [];
  let bytes = 0;
  return {
    push(line) {
      const kept = Buffer.byteLength(line) > maxBytes ? lastBytes(line, maxBytes) : line;
      lines.push(kept);
      bytes += Buffer.byteLength(kept);
      while (lines.length > maxLines || bytes > maxBytes) bytes -= Buffer.byteLength(lines.shift() ?? "");
    },
    text: () => lines.join("\n"),
  };
}

/** The end of `line` within `maxBytes` UTF-8 bytes, never splitting a character. */
function lastBytes(line: string, maxBytes: number): string {
  const chars = Array.from(line);
  let start = chars.length;
  let bytes = 0;
  while (start > 0) {
    const size = Buffer.byteLength(chars[start - 1] ?? "");
    if (bytes + size > maxBytes) break;
    bytes += size;
    start--;
  }
  return chars.slice(start).join("");
}
