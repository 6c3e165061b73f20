import { normalizeRanges, rangeOfName, rangeOfPrefix, type NameRange } from "../registry/name-ranges.js";
import type { Action, Identity } from "./permissions.js";

/**
 * The names on which `identity` may do `action`, as name ranges: exactly the names
 * `isAllowed` accepts for that action ("*" is every name, "fs.*" the names starting with
 * "fs.", anything else one name). A listing walks only these ranges, so a caller allowed few
 * tools of a large registry costs the tools it may see, not the registry.
 */
export function allowedNameRanges(identity: Identity, action: Action): NameRange[] {
  const ranges: NameRange[] = [];
  for (const grant of identity.grants) {
    if (!grant.actions.includes(action) && !grant.actions.includes("admin")) continue;
    for (const pattern of grant.patterns) ranges.push(rangeOfPattern(pattern));
  }
  return normalizeRanges(ranges);
}

/** The names `pattern` matches, as matchesPattern reads it. */
function rangeOfPattern(pattern: string): NameRange {
  if (pattern === "*") return rangeOfPrefix("");
  if (pattern.endsWith(".*")) return rangeOfPrefix(pattern.slice(0, -1));
  return rangeOfName(pattern);
}
