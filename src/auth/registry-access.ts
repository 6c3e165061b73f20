import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import { isAllowed, type Identity } from "./permissions.js";

/**
 * Throws PERMISSION_DENIED unless `identity` may create the registry `registryName`: it needs
 * `registries.create` (or `admin`) on a pattern matching the registry's name.
 */
export function ensureMayCreateRegistry(identity: Identity, registryName: string): void {
  if (isAllowed(identity, "registries.create", registryName)) return;
  throw new ToolRuntimeError(
    "PERMISSION_DENIED",
    ErrorType.PermissionDenied,
    `identity ${quote(identity.name)} may not create registry ${quote(registryName)}: grant it "registries.create" on a pattern matching the registry name, or register in an existing registry`,
  );
}
