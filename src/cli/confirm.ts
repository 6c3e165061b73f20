import { createInterface } from "node:readline/promises";
import type { CliIo } from "./cli-io.js";

/** Whether a confirmation can be asked: `io.stdin` is a terminal. */
export function canConfirm(io: CliIo): boolean {
  return io.stdin?.isTTY === true;
}

/**
 * Asks `question` on stderr and reads one line from stdin. Resolves true for "y" or "yes" (any
 * case), false for anything else, an empty line or the end of input. Rejects when `io.signal`
 * aborts.
 */
export async function confirm(io: CliIo, question: string): Promise<boolean> {
  const input = io.stdin;
  if (input === undefined) return false;
  const reader = createInterface({ input, output: io.stderr, terminal: false });
  try {
    const ended = new Promise<string>((resolve) => reader.once("close", () => resolve("")));
    const asked = reader.question(`${question} [y/N] `, io.signal === undefined ? {} : { signal: io.signal });
    const answer = await Promise.race([asked, ended]);
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    reader.close();
  }
}
