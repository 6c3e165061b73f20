import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Socket } from "node:net";

/** A request handler that serves both HTTP/1.1 and HTTP/2 requests. */
export type NodeRequestHandler = (
  request: http.IncomingMessage | http2.Http2ServerRequest,
  response: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** A listening HTTP port. */
export interface HttpListener {
  /** The port actually bound (useful when 0 was asked for). */
  readonly port: number;
  /** Stops accepting connections, lets requests in flight finish for `graceMs`, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

// Every HTTP/2 connection starts with this preface (RFC 9113 §3.4); HTTP/1.1 never does.
const http2Preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Listens on one port for cleartext HTTP/1.1 and HTTP/2 (prior knowledge) at once. Node's cleartext
 * HTTP/2 server cannot answer HTTP/1.1 by itself, so each connection's first bytes are compared
 * with the HTTP/2 preface and the connection goes to the matching server.
 */
export async function listenHttp(host: string, port: number, handler: NodeRequestHandler): Promise<HttpListener> {
  const http1 = http.createServer(handler);
  const h2 = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const sockets = new Set<Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    routeByPreface(socket, http1, h2);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      http1.closeIdleConnections();
      for (const session of sessions) session.close();
      const timer = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      timer.unref();
      // Keep-alive HTTP/1.1 sockets that become idle are closed as their requests end.
      http1.on("request", (_request, response) => response.once("finish", () => http1.closeIdleConnections()));
      await closed;
      clearTimeout(timer);
    },
  };
}

function routeByPreface(socket: Socket, http1: http.Server, h2: http2.Http2Server): void {
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
      h2.emit("connection", socket);
    } else {
      http1.emit("connection", socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.once("error", () => socket.destroy());
}
