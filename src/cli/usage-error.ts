/**
 * A mistake on the command line: the message names the flag or argument in quotes and says what
 * would fix it. The command exits with code 2.
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
