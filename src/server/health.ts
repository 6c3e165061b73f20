import { status, type Server, type ServerWritableStream } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { ChurnSet } from "../collections/churn-set.js";

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

/** The health service of the gRPC port: a reporter whose Watch streams can be ended. */
export interface GrpcHealth extends HealthReporter {
  /**
   * Ends every `Watch` stream, and any opened later, with UNAVAILABLE and `message`, after the
   * statuses already reported (shutdown: a watcher that heard NOT_SERVING learns that this
   * server's streams are over, instead of holding the port's drain for the whole grace period).
   */
  endWatches(message: string): void;
}

/**
 * Adds `grpc.health.v1.Health` (Check and Watch, from the official `grpc-health-check` package) to a
 * grpc-js server, with a status for the whole server ("") and for each of `serviceNames`.
 */
export function addHealthToGrpcServer(server: Server, serviceNames: readonly string[]): GrpcHealth {
  const names = ["", ...serviceNames];
  const health = new HealthImplementation(Object.fromEntries(names.map((name) => [name, "NOT_SERVING" as const])));
  const watches = new ChurnSet<ServerWritableStream<unknown, unknown>>();
  let endedWith: string | undefined;
  const end = (call: ServerWritableStream<unknown, unknown>, message: string): void => {
    // grpc-js ends a server stream that emits an error with that status, once its writes are out.
    call.emit("error", { code: status.UNAVAILABLE, details: message });
  };
  // The package keeps its Watch calls to itself: its handlers are mounted here, through the
  // structural server type it accepts, with Watch wrapped to keep each call until it is cancelled.
  health.addToServer({
    addService(definition, implementation) {
      const watch = implementation.watch as (call: ServerWritableStream<unknown, unknown>) => void;
      server.addService(definition, {
        ...implementation,
        watch: (call: ServerWritableStream<unknown, unknown>) => {
          watch(call);
          if (endedWith !== undefined) return end(call, endedWith);
          watches.add(call);
          call.once("cancelled", () => watches.delete(call));
        },
      });
    },
  });
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
    endWatches(message) {
      if (endedWith !== undefined) return;
      endedWith = message;
      for (const call of watches) end(call, message);
      watches.clear();
    },
    get isServing() {
      return isServing;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
