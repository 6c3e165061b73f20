import type { ErrorObject } from "ajv/dist/2020.js";
import { didYouMean, suggestName } from "../errors/did-you-mean.js";

/** Most problems listed for one value; the rest are summarised. */
const maxListedProblems = 10;
/** Longest rendering of an offending value, in characters. */
const maxShownValueLength = 60;

/**
 * Turns ajv's errors (from a validator compiled with `allErrors` and `verbose`) into problems an
 * author can act on: one line per problem, duplicates removed, each naming where it is (a JSON
 * pointer into the value, made of the author's own keys, or "(root)"), the offending value, and
 * the allowed values or the nearest known key when there is one. At most 10 lines, then "and N more".
 */
export function formatSchemaErrors(errors: readonly ErrorObject[]): string[] {
  const byPath = new Map<string, ErrorObject[]>();
  for (const error of errors) {
    const group = byPath.get(error.instancePath);
    if (group) group.push(error);
    else byPath.set(error.instancePath, [error]);
  }
  const problems = new Set<string>();
  for (const [path, group] of byPath) {
    for (const problem of describeGroup(path === "" ? "(root)" : path, group)) problems.add(problem);
  }
  const listed = [...problems];
  if (listed.length <= maxListedProblems) return listed;
  return [...listed.slice(0, maxListedProblems), `and ${listed.length - maxListedProblems} more`];
}

/** The problems found at one place of the value. */
function describeGroup(path: string, group: readonly ErrorObject[]): string[] {
  // An enum names the allowed values exactly: the alternatives ajv also reports there ("must be
  // array", "must match a schema in anyOf") only add noise.
  const enumError = group.find((error) => error.keyword === "enum");
  if (enumError) return [describe(path, enumError)];
  const types = group.filter((error) => error.keyword === "type").map((error) => String(error.params["type"]));
  const rest = group.filter(
    (error) => error.keyword !== "type" && !(group.length > 1 && ["anyOf", "oneOf"].includes(error.keyword)),
  );
  const problems: string[] = [];
  if (types.length > 0) {
    const first = group.find((error) => error.keyword === "type");
    problems.push(`${path} is ${showValue(first?.data)}: must be ${[...new Set(types)].join(" or ")}`);
  }
  for (const error of rest) problems.push(describe(path, error));
  return problems;
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
              allowed.filter((v) => typeof v === "string"),
            )
          : "";
      return `${path} is ${showValue(error.data)}: must be one of ${allowed.map(showValue).join(", ")}${hint}`;
    }
    case "const":
      return `${path} is ${showValue(error.data)}: must be ${showValue(params["allowedValue"])}`;
    case "required": {
      const missing = String(params["missingProperty"]);
      const present = isObject(error.data) ? Object.keys(error.data) : [];
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
