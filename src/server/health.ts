import type { Server } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";

/** The serving state reported by health checks. */
export interface HealthReporter {
  /** Reports SERVING for the whole server and each service. */
  serving(): void;
  /** Reports NOT_SERVING for the whole server and each service (shutdown has begun). */
  notServing(): void;
  /** Whether the server is serving. */
  readonly isServing: boolean;
  /** Calls `listener` with every later change of {@link isServing}, until the returned function is called. */
  onChange(listener: (serving: boolean) => void): () => void;
}

/**
 * Adds `grpc.health.v1.Health` (Check and Watch, from the official `grpc-health-check` package) to a
 * grpc-js server, with a status for the whole server ("") and for each of `serviceNames`.
 */
export function addHealthToGrpcServer(server: Server, serviceNames: readonly string[]): HealthReporter {
  const names = ["", ...serviceNames];
  const health = new HealthImplementation(Object.fromEntries(names.map((name) => [name, "NOT_SERVING" as const])));
  health.addToServer(server);
  let isServing = false;
  const listeners = new Set<(serving: boolean) => void>();
  const setAll = (status: "SERVING" | "NOT_SERVING"): void => {
    const serving = status === "SERVING";
    const changed = serving !== isServing;
    isServing = serving;
    for (const name of names) health.setStatus(name, status);
    if (changed) for (const listener of listeners) listener(serving);
  };
  return {
    serving: () => setAll("SERVING"),
    notServing: () => setAll("NOT_SERVING"),
    get isServing() {
      return isServing;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
