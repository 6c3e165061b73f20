import { cutToWidth } from "./format.js";

/** What a handler last reported: a fraction from 0 to 1 when known, and a message. */
export interface ProgressState {
  readonly fraction?: number | undefined;
  readonly message: string;
}

/**
 * One line showing progress within `columns`: `[██████░░░░░░]  50% message`, or `[ … ] message`
 * when the fraction is unknown. Out-of-range fractions are clamped to 0..1.
 */
export function renderProgressBar(progress: ProgressState, columns: number): string {
  const barWidth = Math.max(10, Math.min(30, Math.floor(columns / 3)));
  const fraction = progress.fraction;
  let bar: string;
  let percent: string;
  if (fraction === undefined || Number.isNaN(fraction)) {
    bar = `[${" ".repeat(Math.floor((barWidth - 1) / 2))}…${" ".repeat(Math.ceil((barWidth - 1) / 2))}]`;
    percent = "   ?";
  } else {
    const clamped = Math.min(1, Math.max(0, fraction));
    const filled = Math.round(clamped * barWidth);
    bar = `[${"█".repeat(filled)}${"░".repeat(barWidth - filled)}]`;
    percent = `${Math.floor(clamped * 100)}%`.padStart(4);
  }
  const text = progress.message === "" ? `${bar} ${percent}` : `${bar} ${percent} ${progress.message}`;
  return cutToWidth(text, Math.max(columns - 1, 1));
}
