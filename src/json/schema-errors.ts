import type { ErrorObject } from "ajv/dist/2020.js";
import { didYouMean, suggestName } from "../errors/did-you-mean.js";
import { countText } from "./count-text.js";

/** Most problems listed for one value; the rest are summarised. */
const maxListedProblems = 10;
/** Longest rendering of an offending value, in characters. */
const maxShownValueLength = 60;
/** Most allowed values an enum's problem lists; the rest are counted. */
const maxShownAllowedValues = 20;
/** Most names a "did you mean" compares with (an enum's values, a value's properties). */
const maxHintCandidates = 1000;

/** A problem not yet written: its text is made only if it is listed. */
interface PendingProblem {
  /** Equal for two problems whose texts are equal (and, rarely, for a few that are not). */
  readonly key: string;
  readonly render: () => string;
}

/**
 * Turns ajv's errors (from a validator compiled with `verbose`) into problems an author can act
 * on: one line per problem, duplicates removed, each naming where it is (a JSON pointer into the
 * value, made of the author's own keys, or "(root)"), the offending value, and the allowed values
 * (at most 20) or the nearest known key when there is one. At most 10 lines, then "and N more".
 * Only the lines listed are written out: the others are only counted, by what they would say.
 */
export function formatSchemaErrors(errors: readonly ErrorObject[]): string[] {
  const byPath = new Map<string, ErrorObject[]>();
  for (const error of errors) {
    const group = byPath.get(error.instancePath);
    if (group) group.push(error);
    else byPath.set(error.instancePath, [error]);
  }
  const listed: string[] = [];
  const texts = new Set<string>();
  const keys = new Set<string>();
  let more = 0;
  for (const [path, group] of byPath) {
    const where = path === "" ? "(root)" : path;
    if (listed.length >= maxListedProblems) {
      for (const key of problemKeys(where, group)) {
        if (keys.has(key)) continue;
        keys.add(key);
        more++;
      }
      continue;
    }
    for (const problem of describeGroup(where, group)) {
      if (listed.length < maxListedProblems) {
        const text = problem.render();
        if (texts.has(text)) continue;
        texts.add(text);
        keys.add(problem.key);
        listed.push(text);
      } else if (!keys.has(problem.key)) {
        keys.add(problem.key);
        more++;
      }
    }
  }
  return more === 0 ? listed : [...listed, `and ${countText(more)} more`];
}

/** The keys of the problems {@link describeGroup} would find, without making anything to write them. */
function problemKeys(path: string, group: readonly ErrorObject[]): string[] {
  const enumError = group.find((error) => error.keyword === "enum");
  if (enumError) return [problemKey(path, enumError)];
  const keys: string[] = [];
  if (group.some((error) => error.keyword === "type")) keys.push(`${path}\0type`);
  for (const error of group) {
    if (error.keyword === "type" || (group.length > 1 && ["anyOf", "oneOf"].includes(error.keyword))) continue;
    keys.push(problemKey(path, error));
  }
  return keys;
}

/** The problems found at one place of the value. */
function describeGroup(path: string, group: readonly ErrorObject[]): PendingProblem[] {
  // An enum names the allowed values exactly: the alternatives ajv also reports there ("must be
  // array", "must match a schema in anyOf") only add noise.
  const enumError = group.find((error) => error.keyword === "enum");
  if (enumError) return [pending(path, enumError)];
  const problems: PendingProblem[] = [];
  const typeErrors = group.filter((error) => error.keyword === "type");
  if (typeErrors.length > 0) {
    problems.push({
      key: `${path}\0type`,
      render: () => {
        const types = new Set(typeErrors.map((error) => String(error.params["type"])));
        return `${path} is ${showValue(typeErrors[0]?.data)}: must be ${[...types].join(" or ")}`;
      },
    });
  }
  for (const error of group) {
    if (error.keyword === "type" || (group.length > 1 && ["anyOf", "oneOf"].includes(error.keyword))) continue;
    problems.push(pending(path, error));
  }
  return problems;
}

function pending(path: string, error: ErrorObject): PendingProblem {
  return { key: problemKey(path, error), render: () => describe(path, error) };
}

function problemKey(path: string, error: ErrorObject): string {
  return `${path}\0${error.keyword}\0${paramsKey(error)}`;
}

/** Objects (allowed values, schemas) stand for themselves in keys, by a number of their own. */
const objectIds = new WeakMap<object, number>();
let nextObjectId = 0;

/** What in an error, besides its place and keyword, its text depends on. */
function paramsKey(error: ErrorObject): string {
  let key = "";
  const params = error.params as Record<string, unknown>;
  for (const name in params) key += `${name}=${scalarOrId(params[name])};`;
  if (error.keyword === "additionalProperties" || error.keyword === "unevaluatedProperties") {
    key += `schema=${scalarOrId(error.parentSchema)}`;
  }
  return key;
}

function scalarOrId(value: unknown): string {
  if (typeof value !== "object" || value === null) return String(value);
  let id = objectIds.get(value);
  if (id === undefined) objectIds.set(value, (id = nextObjectId++));
  return `#${id}`;
}

function describe(path: string, error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "enum": {
      const allowed = (params["allowedValues"] as unknown[] | undefined) ?? [];
      const hint =
        typeof error.data === "string"
          ? didYouMean(
              error.data,
              allowed.slice(0, maxHintCandidates).filter((v) => typeof v === "string"),
            )
          : "";
      const shown = allowed.slice(0, maxShownAllowedValues).map(showValue).join(", ");
      const rest = allowed.length - maxShownAllowedValues;
      const others = rest > 0 ? ` or ${countText(rest)} more` : "";
      return `${path} is ${showValue(error.data)}: must be one of ${shown}${others}${hint}`;
    }
    case "const":
      return `${path} is ${showValue(error.data)}: must be ${showValue(params["allowedValue"])}`;
    case "required": {
      const missing = String(params["missingProperty"]);
      const present = isObject(error.data) ? firstKeys(error.data, maxHintCandidates) : [];
      const near = suggestName(missing, present);
      const misspelt = near === undefined ? "" : `: is ${JSON.stringify(near)} a misspelling of it?`;
      return `${path} misses the required property ${JSON.stringify(missing)}${misspelt}`;
    }
    case "additionalProperties":
    case "unevaluatedProperties": {
      const extra = String(params["additionalProperty"] ?? params["unevaluatedProperty"]);
      const properties = (error.parentSchema as { properties?: object } | undefined)?.properties;
      const hint = properties ? didYouMean(extra, Object.keys(properties)) : "";
      return `${path} has the unknown property ${JSON.stringify(extra)}${hint || ": remove it"}`;
    }
    default:
      return `${path} is ${showValue(error.data)}: ${error.message ?? "is invalid"}`;
  }
}

/** A short rendering of a value for a message: scalars as JSON (cut), containers by kind. */
export function showValue(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (isObject(value)) return "an object";
  if (typeof value === "string" && value.length > maxShownValueLength) {
    return JSON.stringify(`${value.slice(0, maxShownValueLength - 3)}...`);
  }
  return JSON.stringify(value) ?? String(value);
}

/** The first `count` keys of `object`, without listing them all. */
function firstKeys(object: Record<string, unknown>, count: number): string[] {
  const keys: string[] = [];
  for (const key in object) {
    if (keys.length >= count) break;
    keys.push(key);
  }
  return keys;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
