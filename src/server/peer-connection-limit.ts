import type { Server, Socket } from "node:net";

/**
 * Open connections counted per remote address, so that one address cannot hold every connection a
 * port takes (its `maxConnections`) and lock other clients, health probes included, out.
 */
export class PeerConnections {
  readonly #open = new Map<string, number>();
  readonly #maxPerPeer: number;

  /** Connections beyond `maxPerPeer` from one address are refused; 0 counts nothing and refuses nothing. */
  constructor(maxPerPeer: number) {
    this.#maxPerPeer = maxPerPeer;
  }

  /**
   * Counts `socket` against its remote address until it closes; when that address already holds
   * the most, destroys the socket instead and returns false (the caller then leaves it alone).
   */
  admit(socket: Socket): boolean {
    if (this.#maxPerPeer <= 0) return true;
    const peer = socket.remoteAddress ?? "";
    const open = this.#open.get(peer) ?? 0;
    if (open >= this.#maxPerPeer) {
      socket.destroy();
      return false;
    }
    this.#open.set(peer, open + 1);
    socket.once("close", () => {
      const left = (this.#open.get(peer) ?? 1) - 1;
      if (left === 0) this.#open.delete(peer);
      else this.#open.set(peer, left);
    });
    return true;
  }

  /** Connections open from `peer` (a remote address as sockets report it). */
  openFrom(peer: string): number {
    return this.#open.get(peer) ?? 0;
  }
}

/**
 * Refuses connections to `server` beyond `maxPerPeer` from one remote address, before any other
 * listener of the server sees them (for servers whose connection listener is Node's own: HTTP,
 * TLS). A refused socket is destroyed at once; Node's own listener then finds it closed.
 */
export function limitConnectionsPerPeer(server: Server, maxPerPeer: number): void {
  if (maxPerPeer <= 0) return;
  const peers = new PeerConnections(maxPerPeer);
  server.prependListener("connection", (socket: Socket) => {
    peers.admit(socket);
  });
}
