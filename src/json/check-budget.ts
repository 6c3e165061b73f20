import { performance } from "node:perf_hooks";
import { countText as count } from "./count-text.js";

/**
 * The work one check of a value against a schema may take: units of about one subschema applied
 * to one value (see `work-units.ts`), and time. Compiled checks charge units as they go (see
 * `budget-keyword.ts`), as do the keywords and the pattern engine this server implements; past
 * either limit the check stops with a {@link CheckBudgetExceededError}. Without it one value of 47
 * bytes could hold the event loop for seconds against a schema of a few hundred bytes.
 *
 * Units make the limit the same on every machine and every run: most checks are bounded by them.
 * A unit's cost varies, though: 15–50 ns in code V8 has optimised, 300–1,000 ns in a check
 * compiled moments ago (V8 optimises it after several runs) or too large for V8 to optimise (an
 * `anyOf` of 100 subschemas or more, measured here), more on a loaded machine. So a check also
 * stops at a time limit, set above what its units take even unoptimised (100,000 units take 100 ms
 * at most), so that it cuts only checks whose units cost far more than that. The clock is read
 * once per {@link sliceUnits} units, from the end of the first slice (a few milliseconds at
 * most): most checks end before it, and need not read the clock at all.
 */

/** Units every check may take whatever the value's size: a few milliseconds at most. */
export const checkBudgetFloorUnits = 100_000;
/** Units a check may take per byte of the value's JSON, beyond the floor. */
export const checkBudgetUnitsPerByte = 4;
/** Time every check may take whatever the value's size, in milliseconds. */
export const checkTimeFloorMs = 250;
/** Bytes of the value's JSON per further millisecond a check may take: 1 µs a byte. */
export const checkBytesPerMs = 1_000;
/**
 * Most errors a check may hold at once. A check collects an error for every alternative that fails
 * (each branch of an `anyOf`, say) until one passes; past this many it stops, so its memory stays
 * a few megabytes whatever the schema.
 */
export const maxPendingErrors = 10_000;
/**
 * Most errors the check that lists a failed value's problems may collect: enough for the ten it
 * lists and a count of the others; past it the answer lists the first problem and "and more".
 */
export const maxListedErrors = 1_000;
/** Units charged between two readings of the clock. */
const sliceUnits = 4096;

/** The units a check of a value of `sizeBytes` bytes of JSON may take. */
export function checkBudgetUnits(sizeBytes: number): number {
  return checkBudgetFloorUnits + checkBudgetUnitsPerByte * Math.max(0, sizeBytes);
}

/** The time a check of a value of `sizeBytes` bytes of JSON may take, in milliseconds. */
export function checkTimeLimitMs(sizeBytes: number, floorMs = checkTimeFloorMs): number {
  return floorMs + Math.max(0, sizeBytes) / checkBytesPerMs;
}

/** What {@link withCheckBudget} allows instead of the defaults. */
export interface CheckBudgetLimits {
  /** Units, instead of {@link checkBudgetUnits}. */
  readonly units?: number;
  /** Time for any value, instead of {@link checkTimeFloorMs}. */
  readonly timeFloorMs?: number;
}

/** A check that ran out of its budget; the message says what it was allowed. */
export class CheckBudgetExceededError extends Error {
  override readonly name = "CheckBudgetExceededError";

  /**
   * @param sizeBytes the size of the value checked, in bytes of JSON
   * @param reason what ran out: the work (units or time), or room for the errors it collects
   *   (only the first check of a value reports that: see `maxPendingErrors`)
   */
  constructor(
    readonly sizeBytes: number,
    readonly reason: "work" | "errors",
  ) {
    super(
      reason === "work"
        ? `the check takes more work than is allowed for ${count(sizeBytes)} bytes (${count(checkBudgetUnits(sizeBytes))} units, about one per subschema applied to one value, within ${count(Math.ceil(checkTimeLimitMs(sizeBytes)))} ms): simplify the schema, or make the value smaller`
        : `the check collects more than ${count(maxPendingErrors)} errors at once (one for each alternative that fails): simplify the schema, or make the value smaller`,
    );
  }
}

/** Thrown by {@link checkBudget} to stop a check; turned into a CheckBudgetExceededError. Made once each. */
class Exhausted extends Error {
  constructor(readonly reason: "work" | "errors") {
    super(`check stopped: ${reason}`);
  }
}
const outOfWork = new Exhausted("work");
const outOfRoom = new Exhausted("errors");

/**
 * The budget of the check under way, which compiled checks read and charge: `left` is what is left
 * of the current slice of units. Outside a check it is Infinity, so that charging there (a pattern
 * tested at registration, say) costs nothing.
 */
export const checkBudget = {
  left: Number.POSITIVE_INFINITY,
  /** Units not yet handed out in slices. */
  reserve: 0,
  /**
   * When the check must stop, on `performance.now()`'s clock; until its first slice runs out, the
   * time it may take (most checks end within it: reading the clock would be most of their cost).
   */
  deadline: Number.POSITIVE_INFINITY,
  /** Whether `deadline` is still a duration. */
  started: false,
  /** Called when `left` fell below 0: hands out another slice, or stops the check. */
  exhausted(): void {
    if (!this.started) {
      this.started = true;
      this.deadline += performance.now();
    }
    while (this.left < 0) {
      if (this.reserve <= 0 || performance.now() > this.deadline) throw outOfWork;
      const slice = Math.min(this.reserve, Math.max(sliceUnits, -this.left));
      this.reserve -= slice;
      this.left += slice;
    }
  },
  /** Stops the check under way: it holds too many errors. */
  crowded(): never {
    throw outOfRoom;
  },
  /**
   * The number of properties of `value` (0 for anything but an object), counted once per object:
   * what a keyword that visits every property (`additionalProperties`, `minProperties`…) is
   * charged each time it applies.
   */
  properties(value: unknown): number {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return 0;
    let count = propertyCounts.get(value);
    if (count === undefined) {
      count = 0;
      for (const key in value) if (Object.prototype.hasOwnProperty.call(value, key)) count++;
      propertyCounts.set(value, count);
    }
    return count;
  },
};

/** The properties of the objects checked lately, counted (see `checkBudget.properties`). */
const propertyCounts = new WeakMap<object, number>();

/**
 * Runs `check` within the budget of a value of `sizeBytes` bytes of JSON (see
 * {@link checkBudgetUnits} and {@link checkTimeLimitMs}, or `limits`). Throws a
 * {@link CheckBudgetExceededError} when it takes more, or holds more than
 * {@link maxPendingErrors} errors at once.
 */
export function withCheckBudget<T>(sizeBytes: number, check: () => T, limits: CheckBudgetLimits = {}): T {
  const { left, reserve, deadline, started } = checkBudget;
  const units = limits.units ?? checkBudgetUnits(sizeBytes);
  checkBudget.left = Math.min(units, sliceUnits);
  checkBudget.reserve = units - checkBudget.left;
  checkBudget.deadline = checkTimeLimitMs(sizeBytes, limits.timeFloorMs);
  checkBudget.started = false;
  try {
    return check();
  } catch (error) {
    if (error instanceof Exhausted) throw new CheckBudgetExceededError(sizeBytes, error.reason);
    throw error;
  } finally {
    checkBudget.left = left;
    checkBudget.reserve = reserve;
    checkBudget.deadline = deadline;
    checkBudget.started = started;
  }
}

/** Takes `units` from the budget of the check under way, stopping it when none is left. */
export function spendCheckBudget(units: number): void {
  if ((checkBudget.left -= units) < 0) checkBudget.exhausted();
}
