import { randomUUID } from "node:crypto";

/**
 * A new execution id: a random UUID as one flat string. `randomUUID()` builds its text from about
 * twenty concatenated pieces, which V8 keeps as a tree of string nodes (some 430 bytes) until
 * something flattens it, and a record holds its id for as long as it is retained. Copying the text
 * through a Buffer gives a flat string of 36 one-byte characters (about 50 bytes). (Converting the
 * id to a number flattened it too, until the optimising compiler dropped the unused conversion.)
 */
export function newExecutionId(): string {
  return Buffer.from(randomUUID(), "latin1").toString("latin1");
}
