import { randomUUID } from "node:crypto";

/**
 * A new execution id: a random UUID as one flat string. `randomUUID()` builds its text from about
 * twenty concatenated pieces, which V8 keeps as a tree of string nodes (some 460 bytes) until
 * something flattens it; a retained record would hold that tree for its lifetime. Converting it
 * to a number (NaN, discarded) flattens it in place, leaving one node around the plain text.
 */
export function newExecutionId(): string {
  const id = randomUUID();
  Number(id);
  return id;
}
