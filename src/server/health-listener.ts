import { Worker } from "node:worker_threads";
import type { HealthReporter } from "./health.js";
import type { HealthThreadData, HealthThreadMessage } from "./health-listener-thread.js";
import { HealthSignals } from "./health-signals.js";

/** A listening plain-HTTP health port. */
export interface HealthListener {
  /** The port actually bound (useful when 0 was asked for). */
  readonly port: number;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Bounds of the health port. */
export interface HealthListenOptions {
  readonly host: string;
  readonly port: number;
  /** Most open connections on the port. */
  readonly maxConnections: number;
  /** Most open connections on the port from one remote address (0: no bound of its own). */
  readonly maxConnectionsPerPeer: number;
  /** How long the main event loop may go without turning before both endpoints fail; default {@link unresponsiveAfterMs}. */
  readonly unresponsiveAfterMs?: number;
}

const threadScript = new URL("./health-listener-thread.js", import.meta.url);
/** How often the main thread shows the health thread that its event loop turns, in milliseconds. */
const beatIntervalMs = 100;
/**
 * How long the main thread's event loop may go without turning before /healthz and /readyz fail.
 * Floods stall it for a second or two at worst; a loop stuck for this long is taken for a process
 * that will not recover, which a liveness probe is there to restart.
 */
export const unresponsiveAfterMs = 10_000;

/**
 * Listens in cleartext HTTP/1.1 on `host:port` and answers only `GET /healthz` and `GET /readyz`
 * (404 to anything else), so that probes without a client certificate reach health under mutual
 * TLS. It serves no RPC, metrics or data. The port is served by a thread of its own, so probes
 * are answered at once however busy the service ports keep the main event loop; both endpoints
 * fail (503) when that loop has not turned for {@link unresponsiveAfterMs}. Rejects when the port
 * cannot be bound.
 */
export async function listenHealth(options: HealthListenOptions, health: HealthReporter): Promise<HealthListener> {
  const signals = new HealthSignals();
  signals.serving = health.isServing;
  signals.mainBeatAt = Date.now();
  const stopFollowing = health.onChange((serving) => (signals.serving = serving));
  const beat = setInterval(() => (signals.mainBeatAt = Date.now()), beatIntervalMs);
  beat.unref();
  const data: HealthThreadData = {
    host: options.host,
    port: options.port,
    signals: signals.buffer,
    unresponsiveAfterMs: options.unresponsiveAfterMs ?? unresponsiveAfterMs,
    maxConnections: options.maxConnections,
    maxConnectionsPerPeer: options.maxConnectionsPerPeer,
  };
  const worker = new Worker(threadScript, { workerData: data, execArgv: [] });
  // The thread never holds the process open: the service ports do while they are up.
  worker.unref();
  const stop = (): void => {
    clearInterval(beat);
    stopFollowing();
  };
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      worker.on("message", (message: HealthThreadMessage) => {
        if (message.kind === "listening") resolve(message.port);
        else if (message.kind === "failed") {
          reject(Object.assign(new Error(`health port: ${message.message}`), { code: message.code }));
        }
      });
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`health port: its thread exited with code ${code}`)));
    });
    return {
      port,
      async close() {
        stop();
        worker.postMessage({ kind: "close" });
        await exited;
      },
    };
  } catch (error) {
    stop();
    await worker.terminate();
    throw error;
  }
}
