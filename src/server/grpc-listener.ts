import net from "node:net";
import { Server, ServerCredentials, type ChannelOptions, type ServerInterceptor } from "@grpc/grpc-js";
import type { ConnectionOptions } from "./connection-options.js";
import { ConnectionIntake, streamsPerTurn } from "./connection-intake.js";
import { createHeaderDeadline, type HeaderDeadline } from "./header-deadline.js";
import { useChurnMapForStreams, watchGrpcSessions } from "./http2-stream-table.js";
import { withFrameFlagCheck } from "./grpc-frame-flags.js";
import { withHostCheck } from "./grpc-host-check.js";
import { incompleteRequestInterceptor } from "./incomplete-request-interceptor.js";
import { PeerConnections } from "./peer-connection-limit.js";
import type { RebindingGuard } from "./rebinding-guard.js";
import type { TlsMaterial } from "./tls-config.js";

/** A grpc-js server with the limits of the gRPC port, before it listens. */
export interface GrpcServer {
  /** The grpc-js server: mount services on it. */
  readonly server: Server;
  /** Listens on `host:port` (TLS and mutual TLS when `tls` is given); resolves to the port bound. */
  listen(host: string, port: number, tls?: TlsMaterial): Promise<number>;
  /**
   * Stops the port: no new connections, no new calls (clients get GOAWAY), in-flight calls get
   * `graceMs` to finish, then every connection is cut.
   */
  shutdown(graceMs: number): Promise<void>;
  /** Cuts every connection at once. */
  forceShutdown(): void;
}

/**
 * Creates a grpc-js server with the message size, stream and connection limits set. The port's
 * socket is ours, not grpc-js's: connections are handed to grpc-js through its connection injector,
 * so that the bounds on connections (`maxConnections`, `maxConnectionsPerPeer`) and the header
 * timeout (`headerTimeoutMs`, which grpc-js lacks) apply. A connection's clock stops at its first
 * call, seen by an interceptor. With `rebindingGuard`, calls naming an authority it does not serve
 * are refused (grpc-host-check.ts).
 */
export function createGrpcServer(options: ConnectionOptions, rebindingGuard?: RebindingGuard): GrpcServer {
  const headerDeadline = createHeaderDeadline(options.headerTimeoutMs);
  const channelOptions: ChannelOptions & { interceptors: ServerInterceptor[] } = {
    "grpc.max_receive_message_length": options.maxMessageBytes,
    "grpc.max_send_message_length": options.maxMessageBytes,
    "grpc.max_concurrent_streams": options.maxConcurrentStreams,
    "grpc.keepalive_time_ms": options.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": options.keepaliveTimeoutMs,
    // Clients may ping as often as every 10 s without being told off (GOAWAY "too_many_pings").
    "grpc.http2.min_ping_interval_without_data_ms": 10_000,
    "grpc.keepalive_permit_without_calls": 1,
    // Channelz keeps counts and timestamps of every call and message (closures, clock reads and
    // two Dates a call: several percent of a no-op call's server time) for a channelz service,
    // which this server does not offer. Without it grpc-js's forceShutdown no longer finds the
    // connections: `cutConnections` below does.
    "grpc.enable_channelz": 0,
    // One interceptor, not two: each wraps every call in another layer that all its events cross
    // (the host and frame-flag checks only look at grpc-js's base call; they add no layer).
    interceptors: [
      firstCallInterceptor(
        headerDeadline,
        withHostCheck(rebindingGuard, withFrameFlagCheck(incompleteRequestInterceptor())),
      ),
    ],
  };
  if (options.maxConnectionAgeMs > 0) {
    channelOptions["grpc.max_connection_age_ms"] = options.maxConnectionAgeMs;
    channelOptions["grpc.max_connection_age_grace_ms"] = options.maxConnectionAgeGraceMs;
  }
  if (options.maxConnectionIdleMs > 0) channelOptions["grpc.max_connection_idle_ms"] = options.maxConnectionIdleMs;
  const server = new Server(channelOptions);
  const intake = new ConnectionIntake(streamsPerTurn);
  watchGrpcSessions(server, (session) => {
    useChurnMapForStreams(session);
    intake.watch(session);
  });
  let listener: net.Server | undefined;
  const injectors: ReturnType<Server["createConnectionInjector"]>[] = [];
  const peers = new PeerConnections(options.maxConnectionsPerPeer);
  // Stops every call and cuts every connection (GOAWAY with CANCEL, on a timer of 0 ms) through
  // the injectors that hold them, since grpc-js's forceShutdown reaches connections only through
  // channelz.
  const cutConnections = (): void => {
    server.forceShutdown();
    intake.close();
    for (const injector of injectors) injector.drain(0);
  };
  const stopListening = (): Promise<void> =>
    new Promise((resolve) => {
      if (!listener?.listening) resolve();
      else listener.close(() => resolve());
    });
  return {
    server,
    async listen(host, port, tls) {
      const credentials = tls
        ? ServerCredentials.createSsl(
            tls.clientCa ?? null,
            [{ private_key: tls.key, cert_chain: tls.cert }],
            tls.clientCa !== undefined,
          )
        : ServerCredentials.createInsecure();
      const connections = server.createConnectionInjector(credentials);
      injectors.push(connections);
      const socketServer = net.createServer((socket) => {
        if (!peers.admit(socket)) return;
        headerDeadline.watch(socket);
        intake.admit(socket, () => connections.injectConnection(socket));
      });
      // Connections beyond the bound are closed by Node as they arrive.
      socketServer.maxConnections = options.maxConnections;
      listener = socketServer;
      await new Promise<void>((resolve, reject) => {
        socketServer.once("error", reject);
        socketServer.listen(port, host, () => {
          socketServer.off("error", reject);
          resolve();
        });
      });
      return (socketServer.address() as net.AddressInfo).port;
    },
    async shutdown(graceMs) {
      const stopped = stopListening();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(cutConnections, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      await stopped;
    },
    forceShutdown() {
      void stopListening();
      cutConnections();
    },
  };
}

/**
 * Tells the header deadline that a connection delivered a call's headers (health checks included),
 * then hands the call to `next`.
 */
function firstCallInterceptor(headerDeadline: HeaderDeadline, next: ServerInterceptor): ServerInterceptor {
  return (method, call) => {
    // Most calls come on connections that delivered one already: nothing to stop.
    if (headerDeadline.pending) {
      // grpc-js names the peer "address:port", or just the address when it has no port.
      const peer = call.getPeer();
      const colon = peer.lastIndexOf(":");
      headerDeadline.satisfied({
        remoteAddress: colon < 0 ? peer : peer.slice(0, colon),
        remotePort: colon < 0 ? undefined : Number(peer.slice(colon + 1)),
      });
    }
    return next(method, call);
  };
}
