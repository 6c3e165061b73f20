import { randomUUID } from "node:crypto";
import { declaresFormElicitation } from "./mcp-approval.js";

/** The session id header of Streamable HTTP (lowercase, as fetch's Headers give it). */
export const sessionIdHeader = "mcp-session-id";

/** What ends the session id of a client that declared form elicitation at `initialize`. */
const elicitationSuffix = ".elicitation";

/**
 * A new session id for a 2025-era client's `initialize` (its params as sent): a random id, with
 * {@link elicitationSuffix} when the client declared form elicitation. The gateway keeps no
 * session: the id travels with every later request of the client, so whichever replica serves one
 * knows the client can be asked to approve a run without having seen its `initialize`. A client
 * that forges the suffix only gets questions it cannot answer, and its runs wait for
 * ApproveExecution as they would without it.
 */
export function newSessionId(initializeParams: unknown): string {
  const capabilities = (initializeParams as { capabilities?: unknown } | undefined)?.capabilities;
  return `${randomUUID()}${declaresFormElicitation(capabilities) ? elicitationSuffix : ""}`;
}

/** Whether a session id handed out by {@link newSessionId} says that the client answers form elicitation. */
export function sessionAnswersElicitation(sessionId: string): boolean {
  return sessionId.endsWith(elicitationSuffix);
}
