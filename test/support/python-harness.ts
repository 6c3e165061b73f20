// The harness of the test suites that drive a real Python grpcio client (test/python/*.py) against
// a real server: the interpreter, the Python stubs generated from the contract, running one scenario
// and parsing the JSON it prints, what the scripts print, and the checks of an RPC error they saw.
import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startTestServer } from "./test-server.js";

const execFileAsync = promisify(execFile);

/**
 * Debian's interpreter, the one with python3-grpcio and python3-grpc-tools (see
 * scripts/ensure-test-deps.mjs); the first python3 on PATH may lack them.
 */
export const python = "/usr/bin/python3";

/** The repository root: npm test and mocha run from it; the compiled tests live in dist/. */
export const repoRoot = process.cwd();

const contractDir = path.join(repoRoot, "proto");

/** A UUID as the server writes execution ids (lowercase, with dashes). */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// ---------------------------------------------------------------------------------------------
// What the scripts print (snake_case, as test/python/grpc_observations.py writes it).

/** A toolruntime.v1.ToolError as a script reports it. */
export interface ToolErrorSeen {
  readonly tool_name: string;
  readonly error_type: string;
  readonly details: string;
}

/** A failed call: its status, and the google.rpc.Status decoded from the trailer. */
export interface RpcErrorSeen {
  readonly ok: false;
  readonly code: string;
  readonly code_number: number;
  readonly message: string;
  readonly status: { readonly code: number; readonly message: string; readonly detail_types: string[] } | null;
  readonly tool_error: ToolErrorSeen | null;
}

/** A toolruntime.v1.ToolResult as a script reports it. */
export interface ResultSeen {
  readonly success: boolean;
  readonly output: Record<string, unknown>;
  readonly error: ToolErrorSeen | null;
  readonly duration_ms: number;
  readonly metadata: Record<string, unknown>;
}

/**
 * An event as a script reports it: the fields every event has, and those of some kinds (which
 * fields a script writes for which kind is up to the script).
 */
export interface EventSeen {
  readonly sequence: number;
  readonly kind: string;
  readonly execution_id: string;
  readonly fraction?: number | null;
  readonly message?: string;
  readonly result?: ResultSeen;
  readonly attempt?: number;
  readonly success?: boolean;
  readonly error?: ToolErrorSeen | null;
  readonly was_active?: boolean;
  readonly tool_name?: string;
}

// ---------------------------------------------------------------------------------------------
// The Python stubs of the contract.

/** grpc_tools' directory of the well-known protos (google/protobuf/*.proto). */
async function grpcToolsIncludeDir(): Promise<string> {
  const { stdout } = await execFileAsync(python, [
    "-c",
    "import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), '_proto'))",
  ]);
  return stdout.trim();
}

async function protoc(args: readonly string[]): Promise<void> {
  await execFileAsync(python, ["-m", "grpc_tools.protoc", ...args], { cwd: repoRoot });
}

async function contractFiles(): Promise<string[]> {
  const files = await readdir(path.join(contractDir, "toolruntime/v1"));
  return files.filter((file) => file.endsWith(".proto")).sort();
}

/** Generates the Python messages and grpcio stubs of the contract and of rpc_status.proto into `outDir`. */
export async function generatePythonStubs(outDir: string): Promise<void> {
  const include = await grpcToolsIncludeDir();
  await protoc([
    ...["-I", "proto", "-I", "test/python", "-I", include],
    `--python_out=${outDir}`,
    `--grpc_python_out=${outDir}`,
    ...(await contractFiles()).map((file) => `proto/toolruntime/v1/${file}`),
    "test/python/rpc_status.proto",
  ]);
}

// ---------------------------------------------------------------------------------------------
// Running scenarios.

/** Runs one scenario of a script and returns the JSON object it printed. */
export type ScenarioRunner = <T>(name: string, params?: Record<string, unknown>) => Promise<T>;

/**
 * Registers, in the calling `describe`, a `before` hook that starts a test server and generates the
 * Python stubs into a temporary directory, and an `after` hook that closes the server and removes
 * the directory. Returns the function that runs one scenario of `script` (a path from the
 * repository root) against that server: `params`, when given, go to the script as one JSON
 * argument after the scenario's name.
 */
export function pythonScenarios(script: string): ScenarioRunner {
  const clientScript = path.join(repoRoot, script);
  let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
  let stubsDir: string | undefined;

  before(async function () {
    server = await startTestServer();
    stubsDir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-python-stubs-"));
    await generatePythonStubs(stubsDir);
  });

  after(async function () {
    await server?.close(0);
    if (stubsDir) await rm(stubsDir, { recursive: true, force: true });
  });

  return async function scenario<T>(name: string, params?: Record<string, unknown>): Promise<T> {
    if (!server || !stubsDir) throw new Error("the server or the Python stubs are missing: see the before hook");
    const args = [clientScript, stubsDir, server.grpcAddress, name, ...(params ? [JSON.stringify(params)] : [])];
    const { stdout } = await execFileAsync(python, args, {
      cwd: repoRoot,
      timeout: 50_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout) as T;
  };
}

// ---------------------------------------------------------------------------------------------
// Checks.

/**
 * Expects a failed call with `code` whose trailer carries a ToolError (of `errorType`, when given)
 * whose details are the status message, and whose message contains `fragment` when given; returns
 * the ToolError.
 */
export function expectRpcError(
  seen: RpcErrorSeen | object | null | undefined,
  code: string,
  errorType?: string,
  fragment?: string,
): ToolErrorSeen {
  expect(seen, `the call should have failed with ${code}`).to.be.an("object");
  expect(seen, `the call should have failed with ${code}`).to.have.property("ok", false);
  const error = seen as RpcErrorSeen;
  expect(error.code, error.message).to.equal(code);
  if (fragment !== undefined) expect(error.message).to.contain(fragment);
  expect(
    error.status,
    `${error.code} "${error.message}" should carry a google.rpc.Status in grpc-status-details-bin`,
  ).to.not.equal(null);
  expect(error.status?.code, "google.rpc.Status.code").to.equal(error.code_number);
  expect(error.status?.message, "google.rpc.Status.message").to.equal(error.message);
  expect(error.tool_error, "a toolruntime.v1.ToolError detail").to.not.equal(null);
  const toolError = error.tool_error as ToolErrorSeen;
  if (errorType !== undefined) expect(toolError.error_type, toolError.details).to.equal(errorType);
  else expect(toolError.error_type, "the ToolError's error_type").to.be.a("string").that.is.not.empty;
  expect(toolError.details).to.equal(error.message);
  return toolError;
}
