/**
 * A store URL fit for logs and messages: the password (if any) replaced by "***", and anything
 * that does not parse as a URL shown as "(unparsable URL)" rather than echoed, since it may hold a
 * secret in an unexpected place.
 */
export function maskUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparsable URL)";
  }
}
