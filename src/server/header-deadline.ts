import type { Socket } from "node:net";

/** The peer of a connection, the way both ports can name it from a socket or a call. */
interface Peer {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/** Closes connections that do not deliver a request's headers in time (slow-header attacks). */
export interface HeaderDeadline {
  /** Starts (or restarts) the clock of a connection that owes a request's headers. */
  watch(socket: Socket): void;
  /** A request's headers arrived on the connection of this peer: its clock stops. */
  satisfied(peer: Peer): void;
  /** Whether some connection's clock runs: when none does, a call has nothing to stop. */
  readonly pending: boolean;
}

/**
 * Creates a header deadline of `timeoutMs`. Connections are named by their peer's address and port
 * rather than by socket object, because a request (HTTP/2 through a session's socket proxy, grpc-js
 * through its call) reaches the listener only by that name.
 */
export function createHeaderDeadline(timeoutMs: number): HeaderDeadline {
  const timers = new Map<string, NodeJS.Timeout>();
  const cleaned = new WeakSet<Socket>();
  const nameOf = (peer: Peer): string => `${peer.remoteAddress ?? ""}:${peer.remotePort ?? ""}`;
  const stop = (name: string): void => {
    const timer = timers.get(name);
    if (timer === undefined) return;
    clearTimeout(timer);
    timers.delete(name);
  };
  return {
    watch(socket) {
      const name = nameOf(socket);
      stop(name);
      if (!cleaned.has(socket)) {
        cleaned.add(socket);
        socket.once("close", () => stop(name));
      }
      const timer = setTimeout(() => {
        timers.delete(name);
        socket.destroy();
      }, timeoutMs);
      timer.unref();
      timers.set(name, timer);
    },
    satisfied(peer) {
      if (timers.size > 0) stop(nameOf(peer));
    },
    get pending() {
      return timers.size > 0;
    },
  };
}
