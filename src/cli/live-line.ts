import { cutToWidth } from "./format.js";

/**
 * The last line of a terminal, redrawn in place (carriage return and erase-line) until it is
 * committed. Text is cut to the terminal width so that it never wraps, which would break the redraw.
 */
export class LiveLine {
  private shown = false;

  /** Draws on `out`, a terminal `columns` wide. */
  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly columns: number,
  ) {}

  /** Replaces the live line with `text`. */
  update(text: string): void {
    this.out.write(`\r\x1b[2K${cutToWidth(text, Math.max(this.columns - 1, 1))}`);
    this.shown = true;
  }

  /** Keeps what the live line shows and moves below it; does nothing when nothing is shown. */
  commit(): void {
    if (!this.shown) return;
    this.out.write("\n");
    this.shown = false;
  }

  /** Whether something is shown on the live line. */
  get active(): boolean {
    return this.shown;
  }
}
