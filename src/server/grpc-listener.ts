import { Server, ServerCredentials } from "@grpc/grpc-js";

/** Options of {@link createGrpcServer}. */
export interface GrpcServerOptions {
  /** Largest request or response message, in bytes; larger is RESOURCE_EXHAUSTED. */
  readonly maxMessageBytes: number;
}

/** A grpc-js server with the message size limits set. Add services, then {@link bindGrpcServer}. */
export function createGrpcServer(options: GrpcServerOptions): Server {
  return new Server({
    "grpc.max_receive_message_length": options.maxMessageBytes,
    "grpc.max_send_message_length": options.maxMessageBytes,
  });
}

/** Binds a grpc-js server without TLS; resolves to the port actually bound. */
export function bindGrpcServer(server: Server, host: string, port: number): Promise<number> {
  // IPv6 literals need brackets in a gRPC target.
  const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(target, ServerCredentials.createInsecure(), (error, boundPort) => {
      if (error) reject(error);
      else resolve(boundPort);
    });
  });
}

/**
 * Stops a grpc-js server: no new calls, in-flight calls get `graceMs` to finish, then every
 * connection is cut.
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
