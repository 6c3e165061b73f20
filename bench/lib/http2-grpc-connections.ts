import { once } from "node:events";
import { connect, type ClientHttp2Session } from "node:http2";

/** One plain-text HTTP/2 connection to a gRPC server, and why it can no longer carry calls. */
export interface GrpcConnection {
  readonly session: ClientHttp2Session;
  /** "host:port" it is connected to. */
  readonly address: string;
  /** Set once the connection went away (GOAWAY, error, close): why, for the calls it fails. */
  failure: string | undefined;
}

/** Connections opened by {@link openHttp2GrpcConnections}. */
export interface Http2GrpcClients {
  readonly connections: readonly GrpcConnection[];
  /** Destroys every connection (calls still in flight fail). */
  readonly close: () => void;
}

/** Options of {@link openHttp2GrpcConnections}. */
export interface Http2GrpcConnectOptions {
  /** How long to wait for each connection's first SETTINGS frame, in milliseconds. Default 10,000. */
  readonly timeoutMs?: number;
}

/** HTTP/2 error codes by value (RFC 9113 §7). */
const errorNames = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

/** The name of an HTTP/2 error code, e.g. "NO_ERROR" for 0, or the number. */
export function http2ErrorName(code: number): string {
  return errorNames[code] ?? `error ${code}`;
}

/** The peer's stream limit (SETTINGS_MAX_CONCURRENT_STREAMS) on `connection`; Infinity when it set none. */
export function streamLimitOf(connection: GrpcConnection): number {
  return connection.session.remoteSettings.maxConcurrentStreams ?? Number.POSITIVE_INFINITY;
}

async function openOne(address: string, timeoutMs: number): Promise<GrpcConnection> {
  const session = connect(`http://${address}`, { settings: { enablePush: false } });
  const connection: GrpcConnection = { session, address, failure: undefined };
  session.on("goaway", (code: number, lastStreamId: number) => {
    connection.failure ??= `${address} sent GOAWAY (${http2ErrorName(code)}, last stream ${lastStreamId})`;
  });
  session.on("error", (error: Error) => {
    connection.failure ??= `the connection to ${address} failed: ${error.message}`;
  });
  session.on("close", () => {
    connection.failure ??= `the connection to ${address} closed`;
  });
  // The server's SETTINGS carry its stream limit: wait for them, so the first calls respect it.
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    await once(session, "remoteSettings", { signal });
  } catch (error) {
    session.destroy();
    throw new Error(`no HTTP/2 SETTINGS from ${address} within ${timeoutMs} ms: ${String(error)}`, { cause: error });
  }
  return connection;
}

/**
 * Opens `connections` plain-text (h2c) HTTP/2 connections to the gRPC server at `address`
 * ("host:port") and waits until each has the server's SETTINGS. Rejects (closing those opened)
 * when one cannot connect.
 */
export async function openHttp2GrpcConnections(
  address: string,
  connections: number,
  options: Http2GrpcConnectOptions = {},
): Promise<Http2GrpcClients> {
  const opened = await Promise.allSettled(
    Array.from({ length: connections }, () => openOne(address, options.timeoutMs ?? 10_000)),
  );
  const ready = opened.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const close = (): void => ready.forEach((connection) => connection.session.destroy());
  const refused = opened.find((result) => result.status === "rejected");
  if (refused) {
    close();
    throw refused.reason;
  }
  return { connections: ready, close };
}
