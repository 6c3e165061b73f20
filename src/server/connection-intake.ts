import type http2 from "node:http2";
import type { Socket } from "node:net";

/**
 * Most new HTTP/2 streams a port takes in per turn of the event loop. About 25-50 ms of the loop at
 * the cost of taking a stream in (100-200 µs with its call's start), so that a probe arriving in a
 * burst waits a few such turns, not the burst.
 */
export const streamsPerTurn = 256;

/** Streams a session must have opened before it is paused with the others past the bound. */
const pausedFromStreams = 8;

/** What a connection handed over counts against a turn's bound before its streams are seen. */
const connectionCharge = 64;

/** The libuv side of a socket: stop and start reading its file descriptor. */
interface ReadableHandle {
  readStop(): number;
  readStart(): number;
}

/** The TCP handle under an HTTP/2 session, or undefined when Node's internals differ. */
function handleOf(session: http2.Http2Session): ReadableHandle | undefined {
  // session.socket is a proxy that forbids pause() on a socket the session consumes; its handle is
  // still reachable, and stopping its reads is what pausing it would have done.
  const handle = (session.socket as unknown as { _handle?: Partial<ReadableHandle> | null } | null)?._handle;
  return typeof handle?.readStop === "function" && typeof handle.readStart === "function"
    ? (handle as ReadableHandle)
    : undefined;
}

/** A connection waiting for a turn with room to take its streams in. */
interface WaitingConnection {
  readonly socket: Socket;
  readonly handOver: () => void;
}

/**
 * Bounds the new HTTP/2 streams a port takes in per turn of the event loop, so that a burst cannot
 * hold the loop for seconds and keep everything else, health probes included, waiting behind it.
 * Node reads every ready connection in one poll phase and opens all the streams a read carries: a
 * hundred connections of a hundred calls each held one turn for 1.7 s. Past `streamsPerTurn`:
 * - the port's HTTP/2 sessions that opened 8 streams or more stop reading until the next turn
 *   (each keeps its place; nothing is refused or lost, the client's bytes wait in the kernel), while
 *   sessions that opened fewer, such as a probe's, go on reading;
 * - a new HTTP/2 connection waits to be handed to its server. Waiting connections are taken newest
 *   first: under a burst, the one that just arrived (a probe, or a client that is not part of the
 *   burst) gets the next turn, while the burst's own connections wait their turn behind it (each
 *   still bound by the header timeout). When nothing waits, connections are taken as they come.
 */
export class ConnectionIntake {
  readonly #streamsPerTurn: number;
  /** The port's sessions and how many streams each opened so far. */
  readonly #sessions = new Map<http2.Http2Session, { streams: number }>();
  #paused: { session: http2.Http2Session; handle: ReadableHandle }[] = [];
  #waiting: WaitingConnection[] = [];
  #taken = 0;
  /** What the connections handed over in this turn count against the next (see #handOver). */
  #carried = 0;
  #pausedThisTurn = false;
  #turnEnds = false;
  #closed = false;

  /** `streamsPerTurn` 0 takes everything at once (no bound). */
  constructor(streamsPerTurn: number) {
    this.#streamsPerTurn = streamsPerTurn;
  }

  /** Counts the new streams of `session` from now on, and pauses it with the others past the bound. */
  watch(session: http2.Http2Session): void {
    if (this.#streamsPerTurn <= 0) return;
    const counts = { streams: 0 };
    this.#sessions.set(session, counts);
    session.once("close", () => this.#sessions.delete(session));
    session.on("stream", () => {
      counts.streams += 1;
      this.#took(1);
    });
  }

  /** Hands `socket` to its HTTP/2 server through `handOver` now, or in a later turn while this one is full. */
  admit(socket: Socket, handOver: () => void): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    if (this.#streamsPerTurn <= 0) {
      handOver();
      return;
    }
    if (this.#full()) {
      this.#waiting.push({ socket, handOver });
      this.#endTurnSoon();
      return;
    }
    this.#handOver(handOver);
  }

  /** Destroys the connections still waiting (the port is being cut). */
  close(): void {
    this.#closed = true;
    for (const { socket } of this.#waiting) socket.destroy();
    this.#waiting = [];
  }

  #full(): boolean {
    return this.#taken >= this.#streamsPerTurn;
  }

  /**
   * A new connection's streams are read after it is handed over, in this turn or the next: it is
   * charged up front, in both, for what its first read may open, so that connections arriving one
   * by one do not all read their first hundred streams in the same later turn.
   */
  #handOver(handOver: () => void): void {
    this.#carried += connectionCharge;
    this.#took(connectionCharge);
    handOver();
  }

  #took(streams: number): void {
    this.#taken += streams;
    this.#endTurnSoon();
    if (this.#full() && !this.#pausedThisTurn) {
      this.#pausedThisTurn = true;
      this.#pauseAll();
    }
  }

  #endTurnSoon(): void {
    if (this.#turnEnds) return;
    this.#turnEnds = true;
    setImmediate(() => this.#nextTurn());
  }

  #pauseAll(): void {
    for (const [session, counts] of this.#sessions) {
      // A session that opened a few streams (a probe, a client's first call) is left to read: it
      // costs little, and pausing it would make it wait its turn behind every busy session. One
      // that opened none yet may be about to open a hundred: it waits, and is read first next turn.
      if (counts.streams > 0 && counts.streams < pausedFromStreams) continue;
      const handle = session.destroyed ? undefined : handleOf(session);
      if (handle && handle.readStop() === 0) this.#paused.push({ session, handle });
    }
  }

  #nextTurn(): void {
    this.#taken = this.#carried;
    this.#carried = 0;
    this.#pausedThisTurn = false;
    this.#turnEnds = false;
    const paused = this.#paused;
    this.#paused = [];
    // Newest sessions first: they are then read first in the next poll phase (the kernel reports
    // ready connections in the order their reading was started).
    for (let index = paused.length - 1; index >= 0; index--) {
      const { session, handle } = paused[index] as (typeof paused)[number];
      if (!session.destroyed) handle.readStart();
    }
    // Newest first, while the turn has room; the rest wait for the next one.
    while (this.#waiting.length > 0 && !this.#full()) {
      const next = this.#waiting.pop() as WaitingConnection;
      if (!next.socket.destroyed) this.#handOver(next.handOver);
    }
    if (this.#waiting.length > 0) this.#endTurnSoon();
  }
}
