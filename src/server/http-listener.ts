import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Socket } from "node:net";
import type { ConnectionOptions } from "./connection-options.js";
import { serveConsoleAsset } from "./console-assets.js";
import { redirectRootToConsole } from "./root-redirect.js";
import { withCors } from "./cors.js";
import { createHeaderDeadline } from "./header-deadline.js";
import { watchHttp2Session } from "./http2-session-watch.js";
import { useChurnMapForStreams } from "./http2-stream-table.js";
import { ConnectionIntake, streamsPerTurn } from "./connection-intake.js";
import { limitConnectionsPerPeer, PeerConnections } from "./peer-connection-limit.js";
import { toOriginForm } from "./request-url.js";
import { withMcpRoute } from "./mcp/mcp-route.js";
import type { RebindingGuard } from "./rebinding-guard.js";
import { refuseRebinding } from "./rebinding-http.js";
import type { TlsMaterial } from "./tls-config.js";

/** A request handler that serves both HTTP/1.1 and HTTP/2 requests. */
export type NodeRequestHandler = (
  request: http.IncomingMessage | http2.Http2ServerRequest,
  response: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** A listening HTTP port. */
export interface HttpListener {
  /** The port actually bound (useful when 0 was asked for). */
  readonly port: number;
  /**
   * Drains the port: requests in flight get `graceMs` to finish while new connections are still
   * accepted (so probes read /readyz's 503 instead of a refused connection); then it stops
   * accepting and cuts what is left.
   */
  close(graceMs: number): Promise<void>;
}

/** Where and how {@link listenHttp} listens. */
export interface HttpListenOptions {
  readonly host: string;
  readonly port: number;
  readonly connection: ConnectionOptions;
  /** TLS (and mutual TLS); cleartext when absent. */
  readonly tls?: TlsMaterial | undefined;
  /** Origins whose pages may call from a browser (CORS, see withCors); none when absent. */
  readonly corsOrigins?: readonly string[] | undefined;
  /** Serves `/mcp` (the MCP gateway, server/mcp/); absent: `/mcp` goes to the handler like any path. */
  readonly mcp?: NodeRequestHandler | undefined;
  /**
   * Refuses, with 403, requests to host names or from origins it does not allow (DNS rebinding
   * protection, see rebinding-http.ts); absent: every host and origin is served.
   */
  readonly rebindingGuard?: RebindingGuard | undefined;
}

// Every HTTP/2 connection starts with this preface (RFC 9113 §3.4); HTTP/1.1 never does.
const http2Preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Listens on one port for HTTP/1.1 and HTTP/2 at once. With TLS, ALPN offers "h2" and "http/1.1".
 * In cleartext, Node's HTTP/2 server cannot answer HTTP/1.1 by itself, so each connection's first
 * bytes are compared with the HTTP/2 preface and the connection goes to the matching server.
 */
export async function listenHttp(options: HttpListenOptions, handler: NodeRequestHandler): Promise<HttpListener> {
  const handleWithCors = withCors(withMcpRoute(handler, options.mcp), options.corsOrigins ?? []);
  const rebindingGuard = options.rebindingGuard;
  let closing = false;
  // Requests in flight on the port, so a drain knows when it is over.
  let requestsInFlight = 0;
  let markDrained: () => void = () => undefined;
  const drained = new Promise<void>((resolve) => (markDrained = resolve));
  // Node's own header timeouts are off for servers that do not listen themselves, as here.
  const headerDeadline = createHeaderDeadline(options.connection.headerTimeoutMs);
  const serve: NodeRequestHandler = (request, response) => {
    headerDeadline.satisfied(request.socket);
    requestsInFlight += 1;
    response.once("close", () => {
      requestsInFlight -= 1;
      if (closing && requestsInFlight === 0) markDrained();
    });
    if (!toOriginForm(request)) {
      response.writeHead(400, { "content-type": "text/plain; charset=utf-8" });
      response.end("the request target is not a valid URL\n");
      return;
    }
    if (rebindingGuard !== undefined && refuseRebinding(request, response, rebindingGuard)) return;
    // `/` to the console, the console's static files (/console/); everything else to the RPC handler.
    if (redirectRootToConsole(request, response) || serveConsoleAsset(request, response)) return;
    handleWithCors(request, response);
  };
  // HTTP/1.1 sockets and how many requests each has in flight, so idle ones can be closed at once
  // on shutdown (Node's own tracking is off for a server that does not listen itself).
  const inFlight = new Map<Socket, number>();
  const trackHttp1 = (request: http.IncomingMessage, response: http.ServerResponse): void => {
    const socket = request.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    if (closing) response.setHeader("connection", "close");
    response.once("close", () => {
      const remaining = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, remaining);
      if (closing && remaining === 0) socket.end();
    });
  };
  const http2Options = {
    settings: { maxConcurrentStreams: options.connection.maxConcurrentStreams },
  };
  const sessions = new Set<http2.ServerHttp2Session>();
  const intake = new ConnectionIntake(streamsPerTurn);
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    headerDeadline.watch(socket);
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      inFlight.delete(socket);
    });
  };

  let server: net.Server;
  let h2: http2.Http2Server | http2.Http2SecureServer;
  if (options.tls) {
    const tls = options.tls;
    h2 = http2.createSecureServer(
      {
        ...http2Options,
        cert: tls.cert,
        key: tls.key,
        allowHTTP1: true,
        ALPNProtocols: ["h2", "http/1.1"],
        // The TLS handshake is part of what a connection must finish before its first headers.
        handshakeTimeout: options.connection.headerTimeoutMs,
        ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
      },
      (request, response) => {
        // With allowHTTP1, HTTP/1.1 requests arrive here too, as http.IncomingMessage.
        if (request.httpVersionMajor === 1) trackHttp1(request as never, response as never);
        serve(request, response);
      },
    );
    h2.on("secureConnection", track);
    // Counted on the TCP connection, before its TLS handshake costs anything.
    limitConnectionsPerPeer(h2, options.connection.maxConnectionsPerPeer);
    // HTTP/1.1 over TLS is served by this server: an idle keep-alive connection closes after the
    // idle time (HTTP/2 sessions are watched below; cleartext HTTP/1.1 has Node's 5 s).
    if (options.connection.maxConnectionIdleMs > 0) {
      (h2 as unknown as { keepAliveTimeout: number }).keepAliveTimeout = options.connection.maxConnectionIdleMs;
    }
    server = h2;
  } else {
    const http1 = http.createServer((request, response) => {
      trackHttp1(request, response);
      serve(request, response);
    });
    h2 = http2.createServer(http2Options, serve);
    const peers = new PeerConnections(options.connection.maxConnectionsPerPeer);
    server = net.createServer((socket) => {
      if (!peers.admit(socket)) return;
      track(socket);
      routeByPreface(socket, http1, (http2Socket) =>
        intake.admit(http2Socket, () => h2.emit("connection", http2Socket)),
      );
    });
  }
  const sessionWatch = {
    keepaliveTimeMs: options.connection.keepaliveTimeMs,
    keepaliveTimeoutMs: options.connection.keepaliveTimeoutMs,
    maxIdleMs: options.connection.maxConnectionIdleMs,
  };
  h2.on("session", (session) => {
    useChurnMapForStreams(session);
    intake.watch(session);
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    watchHttp2Session(session, sessionWatch);
  });
  // Connections beyond the bound are closed by Node as they arrive.
  server.maxConnections = options.connection.maxConnections;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    async close(graceMs) {
      closing = true;
      if (requestsInFlight === 0) markDrained();
      // Idle HTTP/1.1 connections close now, busy ones after their last response; HTTP/2
      // sessions get a GOAWAY and close when their streams end.
      const endConnections = (): void => {
        for (const [socket, count] of inFlight) if (count === 0) socket.end();
        for (const session of sessions) session.close();
      };
      endConnections();
      const timer = setTimeout(() => {
        markDrained();
        intake.close();
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      // Until the requests in flight are done, new connections are still taken: the operational
      // endpoints answer them (/readyz with 503) and every RPC is refused with UNAVAILABLE.
      await drained;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      endConnections();
      await closed;
      clearTimeout(timer);
    },
  };
}

/**
 * Sends a cleartext connection to `http1`, or to `toHttp2` once its first bytes are the HTTP/2
 * preface (HTTP/1.1 requests, probes among them, are routed at once; see ConnectionIntake).
 */
function routeByPreface(socket: Socket, http1: http.Server, toHttp2: (socket: Socket) => void): void {
  let received = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    received = Buffer.concat([received, chunk]);
    const compared = Math.min(received.length, http2Preface.length);
    const isHttp2Prefix = received.subarray(0, compared).equals(http2Preface.subarray(0, compared));
    if (isHttp2Prefix && received.length < http2Preface.length) return; // need more bytes to decide
    socket.off("data", onData);
    socket.pause();
    socket.unshift(received);
    if (isHttp2Prefix) {
      // The HTTP/2 session reads the unshifted bytes itself, then takes over the socket's handle.
      toHttp2(socket);
    } else {
      http1.emit("connection", socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.once("error", () => socket.destroy());
}
