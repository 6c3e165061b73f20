import type http2 from "node:http2";

/** How {@link watchHttp2Session} keeps a session alive, and when it ends it. */
export interface Http2SessionWatchOptions {
  /** Quiet time (no frame received) after which the session is pinged, in ms. */
  readonly keepaliveTimeMs: number;
  /** Time the ping may go unanswered before the session is destroyed, in ms. */
  readonly keepaliveTimeoutMs: number;
  /** Time without a stream after which the session is closed (GOAWAY), in ms; 0: never. */
  readonly maxIdleMs: number;
}

/**
 * Keeps an HTTP/2 session of the HTTP port honest, as grpc-js does for the gRPC port: after
 * `keepaliveTimeMs` in which nothing came, it sends a PING, and destroys the session when no answer
 * comes within `keepaliveTimeoutMs`; a session without streams for `maxIdleMs` is closed, which
 * is checked at each of those quiet turns (so it may close up to `keepaliveTimeMs` late).
 *
 * The pings are what end a session Node would otherwise keep forever: after a connection error
 * (a frame over the size limit, DATA after the end of a stream) Node's HTTP/2 sends GOAWAY and
 * stops reading the socket, but neither closes it nor emits anything, so a client that then
 * vanished left its socket open, counted against `maxConnections`. Such a session queues the
 * PING and never sends it. A session with a quiet stream (a watch waiting for its next event)
 * is kept while its peer answers, where an inactivity timeout ended it.
 *
 * Node's session timer is one-shot: frames received re-arm it, a PING's answer does not, so it
 * is set again after each answered ping.
 */
export function watchHttp2Session(session: http2.ServerHttp2Session, options: Http2SessionWatchOptions): void {
  let openStreams = 0;
  let idleSince = performance.now();
  session.once("close", () => clearSessionTimer(session));
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    openStreams += 1;
    stream.once("close", () => {
      openStreams -= 1;
      if (openStreams === 0) idleSince = performance.now();
    });
  });
  session.setTimeout(options.keepaliveTimeMs);
  session.on("timeout", () => {
    if (session.destroyed) return;
    if (
      !session.closed &&
      options.maxIdleMs > 0 &&
      openStreams === 0 &&
      performance.now() - idleSince >= options.maxIdleMs
    ) {
      session.close();
      return;
    }
    const unanswered = setTimeout(() => session.destroy(), options.keepaliveTimeoutMs);
    unanswered.unref();
    let sent: boolean;
    try {
      sent = session.ping((error) => {
        clearTimeout(unanswered);
        if (error) session.destroy();
        else if (!session.destroyed) session.setTimeout(options.keepaliveTimeMs);
      });
    } catch {
      sent = false;
    }
    if (!sent) {
      clearTimeout(unanswered);
      session.destroy();
    }
  });
}

/**
 * Clears the timer `session.setTimeout` armed. Node 20 leaves it running when a session is
 * destroyed, and `setTimeout(0)` does nothing on a destroyed session: the timer, and through its
 * callback the whole session with its socket and streams, stayed in memory until it would have
 * fired (`keepaliveTimeMs` later, a minute by default), so a client opening and closing
 * connections held a minute's worth of them. Node keeps the timer under an internal symbol named
 * "timeout", found here by that name; a session without one is left as it is. Returns whether a
 * timer was cleared.
 */
export function clearSessionTimer(session: http2.Http2Session): boolean {
  for (const key of Object.getOwnPropertySymbols(session)) {
    if (key.description !== "timeout") continue;
    const timer = (session as unknown as Record<symbol, unknown>)[key];
    if (typeof (timer as Partial<NodeJS.Timeout> | null)?.refresh !== "function") return false;
    clearTimeout(timer as NodeJS.Timeout);
    return true;
  }
  return false;
}
