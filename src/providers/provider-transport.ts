import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { Transport } from "@connectrpc/connect";
import { isIP } from "node:net";

/** TLS to the server: PEM contents (strings or Buffers). Any of them may be left out. */
export interface ProviderTlsOptions {
  /** CA certificates that the server's certificate must chain to; the system's CAs when absent. */
  readonly ca?: string | Buffer;
  /** Client certificate, for a server that requires mutual TLS; needs `key`. */
  readonly cert?: string | Buffer;
  /** Private key of the client certificate; needs `cert`. */
  readonly key?: string | Buffer;
}

/** Where and how a provider reaches its server. */
export interface ProviderTransportOptions {
  /** The server's gRPC address, "host:port" or "[v6]:port". */
  readonly address: string;
  /** TLS to the server; absent for plaintext HTTP/2 (h2c). */
  readonly tls?: ProviderTlsOptions | undefined;
  /** A bearer token that will be sent on the stream, if any. */
  readonly token?: string | undefined;
  /** Send the token over plaintext to a host other than loopback. Default false. */
  readonly allowInsecureToken?: boolean | undefined;
}

/** A transport to the server and the means to end its HTTP/2 connection at once. */
export interface ProviderTransport {
  readonly transport: Transport;
  /** Closes the HTTP/2 connection, ending streams still open. */
  close(): void;
}

/**
 * The HTTP/2 transport of a provider: h2c without `tls`, TLS (and mutual TLS with `cert` and `key`)
 * with it. Throws a TypeError for a malformed address, half a client certificate, or a token that
 * would cross the network in clear (plaintext to a non-loopback host without `allowInsecureToken`).
 */
export function createProviderTransport(options: ProviderTransportOptions): ProviderTransport {
  const host = hostOf(options.address);
  const tls = options.tls;
  if (tls && (tls.cert === undefined) !== (tls.key === undefined)) {
    throw new TypeError(
      `tls.${tls.cert === undefined ? "key" : "cert"} needs tls.${tls.cert === undefined ? "cert" : "key"}: pass both the client certificate and its key for mutual TLS`,
    );
  }
  if (!tls && options.token !== undefined && !isLoopbackHost(host) && options.allowInsecureToken !== true) {
    throw new TypeError(
      `refusing to send the token in clear to ${JSON.stringify(options.address)}: pass tls (at least the server's ca), or allowInsecureToken: true on a network you trust`,
    );
  }
  const baseUrl = `${tls ? "https" : "http"}://${options.address}`;
  const nodeOptions = tls
    ? {
        ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
        ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
        ...(tls.key !== undefined ? { key: tls.key } : {}),
      }
    : {};
  const sessionManager = new Http2SessionManager(baseUrl, {}, nodeOptions);
  return {
    transport: createGrpcTransport({ baseUrl, sessionManager }),
    close: () => sessionManager.abort(),
  };
}

/** The host of "host:port" or "[v6]:port"; throws a TypeError for anything else. */
function hostOf(address: string): string {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):([0-9]{1,5})$/.exec(address);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535) {
    throw new TypeError(
      `address ${JSON.stringify(address)} is invalid: use HOST:PORT with a port from 1 to 65535, for example 127.0.0.1:50051 or [::1]:50051`,
    );
  }
  return match[1] ?? match[2] ?? "";
}

/** Whether `host` names this machine only: localhost, 127.0.0.0/8, ::1 or ::ffff:127.x.y.z. */
export function isLoopbackHost(host: string): boolean {
  const lower = host.toLowerCase();
  if (lower === "localhost" || lower.endsWith(".localhost")) return true;
  if (isIP(lower) === 4) return lower.startsWith("127.");
  if (isIP(lower) === 6)
    return lower === "::1" || /^(?:0{0,4}:){0,5}:?ffff:127\./.test(lower) || lower === "0:0:0:0:0:0:0:1";
  return false;
}
