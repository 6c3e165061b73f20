import { Server, ServerCredentials, type ChannelOptions } from "@grpc/grpc-js";
import type { ConnectionOptions } from "./connection-options.js";
import type { TlsMaterial } from "./tls-config.js";

/** A grpc-js server with the message size, stream and connection limits set. */
export function createGrpcServer(options: ConnectionOptions): Server {
  const channelOptions: ChannelOptions = {
    "grpc.max_receive_message_length": options.maxMessageBytes,
    "grpc.max_send_message_length": options.maxMessageBytes,
    "grpc.max_concurrent_streams": options.maxConcurrentStreams,
    "grpc.keepalive_time_ms": options.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": options.keepaliveTimeoutMs,
    // Clients may ping as often as every 10 s without being told off (GOAWAY "too_many_pings").
    "grpc.http2.min_ping_interval_without_data_ms": 10_000,
    "grpc.keepalive_permit_without_calls": 1,
  };
  if (options.maxConnectionAgeMs > 0) {
    channelOptions["grpc.max_connection_age_ms"] = options.maxConnectionAgeMs;
    channelOptions["grpc.max_connection_age_grace_ms"] = options.maxConnectionAgeGraceMs;
  }
  if (options.maxConnectionIdleMs > 0) channelOptions["grpc.max_connection_idle_ms"] = options.maxConnectionIdleMs;
  return new Server(channelOptions);
}

/** Binds a grpc-js server, with TLS (and mutual TLS) when `tls` is given; resolves to the port bound. */
export function bindGrpcServer(server: Server, host: string, port: number, tls?: TlsMaterial): Promise<number> {
  // IPv6 literals need brackets in a gRPC target.
  const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  const credentials = tls
    ? ServerCredentials.createSsl(
        tls.clientCa ?? null,
        [{ private_key: tls.key, cert_chain: tls.cert }],
        tls.clientCa !== undefined,
      )
    : ServerCredentials.createInsecure();
  return new Promise((resolve, reject) => {
    server.bindAsync(target, credentials, (error, boundPort) => {
      if (error) reject(error);
      else resolve(boundPort);
    });
  });
}

/**
 * Stops a grpc-js server: no new calls (clients get GOAWAY), in-flight calls get `graceMs` to
 * finish, then every connection is cut.
 */
export function shutdownGrpcServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.forceShutdown(), graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
