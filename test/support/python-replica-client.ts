import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { generatePythonStubs, python, repoRoot } from "./python-harness.js";

const execFileAsync = promisify(execFile);
let stubs: Promise<string> | undefined;

/** The Python stubs of the contract, generated once per test process and removed at its exit. */
function pythonStubs(): Promise<string> {
  stubs ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-replica-stubs-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    await generatePythonStubs(dir);
    return dir;
  })();
  return stubs;
}

/**
 * Runs a scenario of test/python/replicas_client.py (a real grpcio client) against the replicas at
 * `addresses`, and returns what it printed.
 */
export async function pythonReplicaScenario<T>(
  name: string,
  addresses: readonly string[],
  params: Record<string, unknown> = {},
): Promise<T> {
  const script = path.join(repoRoot, "test/python/replicas_client.py");
  const args = [script, await pythonStubs(), name, JSON.stringify({ addresses, ...params })];
  const { stdout } = await execFileAsync(python, args, { cwd: repoRoot, timeout: 90_000, maxBuffer: 1 << 24 });
  return JSON.parse(stdout) as T;
}

/** A run as the Python client saw it, watched to its end through one replica. */
export interface PythonRunSeen {
  readonly events: {
    kind: string;
    sequence: string;
    attempt?: number;
    result?: { success: boolean; error: { error_type: string } | null };
  }[];
  readonly state: string;
  readonly attempts: number;
}

/** Watches run `id` to its end from Python through the replica at `address`. */
export function pythonWatchToEnd(address: string, id: string): Promise<PythonRunSeen> {
  return pythonReplicaScenario<PythonRunSeen>("watch_to_end", [address], { id, on: 0 });
}
