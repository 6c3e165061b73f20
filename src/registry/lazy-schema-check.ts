import type { JsonObject } from "@bufbuild/protobuf";
import { compileSchema, type SchemaCheck } from "../json/schema-validator.js";

/**
 * A check of `schema` that compiles it on first use, for specs that were validated elsewhere (by
 * the replica that registered them): a replica that loads many tools pays for compiling only those
 * it runs. Undefined when there is no schema.
 */
export function lazySchemaCheck(schema: JsonObject | undefined): SchemaCheck | undefined {
  if (!schema) return undefined;
  let compiled: SchemaCheck | undefined;
  return (value) => (compiled ??= compileSchema(schema))(value);
}
