import type { JsonObject } from "@bufbuild/protobuf";
import { checkAgainstSchema, type SchemaCheck } from "../json/schema-validator.js";

/**
 * A check of `schema` that compiles it on first use (see `checkAgainstSchema`); undefined when
 * there is no schema. It holds nothing but the schema, so making one per run costs nothing
 * worth keeping: a registry need not hold a closure per tool.
 */
export function lazySchemaCheck(schema: JsonObject | undefined): SchemaCheck | undefined {
  if (!schema) return undefined;
  return (value) => checkAgainstSchema(schema, value);
}
