import type { JsonObject } from "@bufbuild/protobuf";
import { readFile } from "node:fs/promises";
import { UsageError } from "./usage-error.js";

const example = `for example --input '{"a":1}'`;

/** Parses `--input JSON`, which must be one JSON object; see {@link parseInputObject}. */
export function parseInputFlag(text: string): JsonObject {
  return parseInputObject(text, `--input ${quoteSample(text)}`);
}

/** Reads and parses `--input-file PATH`; a file that cannot be read is a UsageError naming it. */
export async function readInputFile(path: string): Promise<JsonObject> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(
      `--input-file "${path}" cannot be read (${(error as Error).message}): give the path of a file holding one JSON object`,
    );
  }
  return parseInputObject(text, `--input-file "${path}"`);
}

/**
 * Parses the inputs of a run, which must be one JSON object. `subject` names where the text came
 * from (`--input "{bad"`, `--input-file "PATH"`) in the UsageError thrown for anything else, which
 * says exactly what is wrong: the JSON syntax error (with its position when the parser gives it), or
 * the kind of value found instead of an object.
 */
export function parseInputObject(text: string, subject: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // Newer parsers repeat the text (`, "not json" is not valid JSON`), which the subject already shows.
    const reason = lowerFirst((error as Error).message.replace(/, ".*"(\.\.\.)? is not valid JSON$/s, ""));
    throw new UsageError(`${subject} is not valid JSON: ${reason}; pass one JSON object, ${example}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
    throw new UsageError(`${subject} is ${kind}, not a JSON object: pass one JSON object, ${example}`);
  }
  return value as JsonObject;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function quoteSample(text: string): string {
  const characters = Array.from(text.trim());
  return JSON.stringify(characters.length > 60 ? `${characters.slice(0, 59).join("")}…` : characters.join(""));
}
