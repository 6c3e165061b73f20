import { readFile } from "node:fs/promises";
import { ConnectError, createClient, type CallOptions, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { CliIo } from "./cli-io.js";
import { ExitCode } from "./exit-codes.js";
import { stringValue, type ParsedCommandLine } from "./options.js";
import { describeRpcError } from "./rpc-error.js";
import { UsageError } from "./usage-error.js";

/** The address used when neither `--address` nor `TOOLRUNTIME_ADDRESS` is given. */
export const defaultAddress = "127.0.0.1:50051";

/** Where the server is and how to reach it, validated. */
export interface ConnectionSettings {
  /** HOST:PORT of the server's native gRPC port. */
  readonly address: string;
  /** Bearer token for the authorization header, if any. */
  readonly token: string | undefined;
  /** TLS material; undefined for cleartext HTTP/2 (h2c). */
  readonly tls: TlsMaterial | undefined;
}

/** PEM contents for TLS and mutual TLS. */
export interface TlsMaterial {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/** Clients of the services over one HTTP/2 connection. Close it when done. */
export interface Connection {
  readonly registry: Client<typeof RegistryService>;
  readonly runner: Client<typeof RunnerService>;
  readonly executions: Client<typeof ExecutionService>;
  /** Closes the HTTP/2 connection, cancelling calls still open. */
  close(): void;
}

/**
 * Reads `--address`, `--token` and the `--tls-*` flags (then `TOOLRUNTIME_ADDRESS` and
 * `TOOLRUNTIME_TOKEN`, then the defaults) and loads the TLS files. Throws a UsageError naming the
 * flag or variable at fault.
 */
export async function readConnectionSettings(
  parsed: ParsedCommandLine,
  env: NodeJS.ProcessEnv,
): Promise<ConnectionSettings> {
  const flagAddress = stringValue(parsed, "address");
  const envAddress = env["TOOLRUNTIME_ADDRESS"];
  const [address, addressSource] =
    flagAddress !== undefined
      ? [flagAddress, "--address"]
      : envAddress !== undefined && envAddress !== ""
        ? [envAddress, "TOOLRUNTIME_ADDRESS"]
        : [defaultAddress, "the default address"];
  checkAddress(address, addressSource);

  const flagToken = stringValue(parsed, "token");
  const token = flagToken ?? (env["TOOLRUNTIME_TOKEN"] === "" ? undefined : env["TOOLRUNTIME_TOKEN"]);
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    const source = flagToken === undefined ? "TOOLRUNTIME_TOKEN" : "--token";
    throw new UsageError(
      `${source} is invalid: a token is one or more visible ASCII characters without spaces; pass the token alone`,
    );
  }

  const caPath = stringValue(parsed, "tls-ca");
  const certPath = stringValue(parsed, "tls-cert");
  const keyPath = stringValue(parsed, "tls-key");
  if ((certPath === undefined) !== (keyPath === undefined)) {
    const [given, missing] = certPath === undefined ? ["--tls-key", "--tls-cert"] : ["--tls-cert", "--tls-key"];
    throw new UsageError(`${given} needs ${missing}: pass both the client certificate and its key for mutual TLS`);
  }
  let tls: TlsMaterial | undefined;
  if (caPath !== undefined || certPath !== undefined) {
    const material: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
    if (caPath !== undefined) material.ca = await readPem(caPath, "--tls-ca");
    if (certPath !== undefined) material.cert = await readPem(certPath, "--tls-cert");
    if (keyPath !== undefined) material.key = await readPem(keyPath, "--tls-key");
    tls = material;
  }
  return { address, token, tls };
}

function checkAddress(address: string, source: string): void {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})$/.exec(address);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65535) {
    throw new UsageError(
      `${source} "${address}" is invalid: use HOST:PORT with a port from 1 to 65535, for example 127.0.0.1:50051 or [::1]:50051`,
    );
  }
}

async function readPem(path: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new UsageError(
      `${flag} "${path}" cannot be read (${(error as Error).message}): give the path of a readable PEM file`,
    );
  }
}

/**
 * Opens clients of RegistryService, RunnerService and ExecutionService speaking native gRPC to `settings.address`:
 * `http://` (h2c) without TLS, `https://` with it, the token sent on every call.
 */
export function openConnection(settings: ConnectionSettings): Connection {
  const baseUrl = `${settings.tls === undefined ? "http" : "https"}://${settings.address}`;
  // The TLS material is what createGrpcTransport calls `nodeOptions`; it is given to a session
  // manager of our own so that close() ends the HTTP/2 connection at once instead of leaving it to
  // the idle timeout (runCli may be called many times in one process).
  const sessionManager = new Http2SessionManager(baseUrl, {}, settings.tls === undefined ? {} : { ...settings.tls });
  const interceptors: Interceptor[] = [];
  const token = settings.token;
  if (token !== undefined) {
    interceptors.push((next) => (request) => {
      request.header.set("authorization", `Bearer ${token}`);
      return next(request);
    });
  }
  const transport = createGrpcTransport({ baseUrl, sessionManager, interceptors });
  return {
    registry: createClient(RegistryService, transport),
    runner: createClient(RunnerService, transport),
    executions: createClient(ExecutionService, transport),
    close: () => sessionManager.abort(),
  };
}

/** The options of every call a command makes: cancelled when `io.signal` aborts. */
export function callOptions(io: CliIo): CallOptions {
  return io.signal === undefined ? {} : { signal: io.signal };
}

/**
 * Opens a connection, runs `action` with it and closes it. An RPC error is printed (status code
 * name, message, error type, then `hint(error)` when it returns a line) and becomes exit code 3; an
 * interruption through `io.signal` becomes 130.
 */
export async function withConnection(
  settings: ConnectionSettings,
  io: CliIo,
  call: string,
  action: (connection: Connection) => Promise<number>,
  hint: (error: ConnectError) => string | undefined = () => undefined,
): Promise<number> {
  const connection = openConnection(settings);
  try {
    return await action(connection);
  } catch (error) {
    if (io.signal?.aborted === true) {
      io.stderr.write(`toolruntime: ${call} interrupted; the call was cancelled\n`);
      return ExitCode.interrupted;
    }
    if (error instanceof ConnectError) {
      io.stderr.write(describeRpcError(error, call, settings.address));
      const extra = hint(error);
      if (extra !== undefined) io.stderr.write(`  ${extra}\n`);
      return ExitCode.rpcError;
    }
    throw error;
  } finally {
    connection.close();
  }
}
