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
  const setAll = (status: "SERVING" | "NOT_SERVING"): void => {
    isServing = status === "SERVING";
    for (const name of names) health.setStatus(name, status);
  };
  return {
    serving: () => setAll("SERVING"),
    notServing: () => setAll("NOT_SERVING"),
    get isServing() {
      return isServing;
    },
  };
}
