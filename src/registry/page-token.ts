import { invalidRequest } from "../errors/tool-runtime-error.js";
import { isToolName, quote } from "./names.js";

// A page token is the last name of the previous page, encoded so clients treat it as opaque.
const prefix = "after:";

/** Encodes the token that continues a listing after `lastName`. */
export function encodePageToken(lastName: string): string {
  return Buffer.from(prefix + lastName).toString("base64url");
}

/**
 * Decodes a page token into the name to continue after; "" for an empty token. Throws
 * INVALID_ARGUMENT when the token was not made by {@link encodePageToken}.
 */
export function decodePageToken(token: string, namespace = ""): string {
  if (token === "") return "";
  const text = token.length <= 512 ? Buffer.from(token, "base64url").toString() : "";
  const name = text.startsWith(prefix) ? text.slice(prefix.length) : "";
  // Only the token this module wrote: Buffer skips characters that are not base64url, so a token
  // with anything appended or changed would otherwise decode to a name all the same.
  const canonical = isToolName(name) && encodePageToken(name) === token;
  // A token of another namespace's listing would silently end this one (its name sorts past it).
  const ofThisListing = namespace === "" || name.startsWith(`${namespace}.`);
  if (!canonical || !ofThisListing) {
    throw invalidRequest(
      `page_token is invalid${canonical ? ` for namespace ${quote(namespace)}` : ""}: pass the next_page_token of the previous response of the same listing, or nothing`,
    );
  }
  return name;
}

/** Default page size when a request says 0. */
export const defaultPageSize = 100;
/** Largest page size a request may ask for. */
export const maxPageSize = 1000;

/** Resolves a requested page size: 0 means the default; above the maximum is INVALID_ARGUMENT. */
export function resolvePageSize(requested: number): number {
  if (requested === 0) return defaultPageSize;
  if (requested > maxPageSize) {
    throw invalidRequest(`page_size ${requested} is too large: ask for at most ${maxPageSize}`);
  }
  return requested;
}
