import net from "node:net";

/** Protocol codes of the untyped first messages that are not a StartupMessage. */
const sslRequestCode = 80877103;
const gssEncRequestCode = 80877104;
const cancelRequestCode = 80877102;

/**
 * How one direction's bytes are framed now: "untyped" before the frontend's StartupMessage, "byte"
 * while the backend owes its single-byte answer to an SSLRequest or GSSENCRequest, "opaque" once the
 * connection turned to TLS or GSS (nothing more can be read), "typed" otherwise.
 */
type FrameMode = "untyped" | "typed" | "byte" | "opaque";

/** Splits one direction's byte stream into messages, keeping only the bytes of an unfinished one. */
class Framer {
  #pending: Buffer = Buffer.alloc(0);

  constructor(public mode: FrameMode) {}

  /** Feeds `chunk` and calls `onMessage` for each message it completes, in order ("" for untyped). */
  push(chunk: Buffer, onMessage: (type: string, body: Buffer) => void): void {
    let data = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    // `onMessage` may change the mode (the StartupMessage makes the frontend typed): read it each time.
    while (this.mode !== "opaque") {
      if (this.mode === "byte") {
        if (data.length < 1) break;
        const answer = String.fromCharCode(data.readUInt8(0));
        data = data.subarray(1);
        // 'S' (SSL) or 'G' (GSS) means encrypted bytes follow; 'N' means plain messages go on.
        this.mode = answer === "N" ? "typed" : "opaque";
        continue;
      }
      const header = this.mode === "typed" ? 5 : 4;
      if (data.length < header) break;
      const end = header - 4 + data.readInt32BE(header - 4);
      if (data.length < end) break;
      const type = this.mode === "typed" ? String.fromCharCode(data.readUInt8(0)) : "";
      const body = data.subarray(header, end);
      data = data.subarray(end);
      onMessage(type, body);
    }
    this.#pending = this.mode === "opaque" ? Buffer.alloc(0) : data;
  }
}

/** A `dropAnswerTo()` call: which statements it still swallows the answer to and who waits. */
interface DropArm {
  readonly pattern: string | RegExp;
  readonly count: number;
  remaining: number;
  dropped: number;
  readonly resolve: (dropped: number) => void;
}

/** One proxied connection: its two sockets, what the partition holds and where each direction is. */
interface Link {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  readonly frontend: Framer;
  readonly backend: Framer;
  /** Bytes (or an end, `null`) held by a partition, in arrival order across both directions. */
  readonly held: { toServer: boolean; chunk: Buffer | null }[];
  /** ReadyForQuery messages the server still owes: one per StartupMessage, Query and Sync. */
  awaitedReady: number;
  /** While the answer is swallowed: the ReadyForQuery messages to pass before destroying it. */
  readyUntilDestroyed?: number;
  arm?: DropArm;
  gone: boolean;
}

/**
 * A TCP proxy for fault-injection tests that understands enough of the PostgreSQL wire protocol to
 * drop the answer to a chosen statement after the server has run it (an ambiguous commit), besides
 * cutting connections and partitioning the network. Listens on an ephemeral port of 127.0.0.1.
 */
export class PgFaultProxy {
  readonly #server: net.Server;
  readonly #host: string;
  readonly #targetPort: number;
  readonly #links = new Set<Link>();
  readonly #arms: DropArm[] = [];
  readonly #heldWaiters: { bytes: number; resolve: () => void }[] = [];
  readonly #settledWaiters: (() => void)[] = [];
  #blackHoled = false;

  private constructor(target: string) {
    const separator = target.lastIndexOf(":");
    this.#host = target.slice(0, separator);
    this.#targetPort = Number(target.slice(separator + 1));
    this.#server = net.createServer((client) => this.#accept(client));
  }

  /** Starts a proxy to `target` ("host:port") on an ephemeral port of 127.0.0.1. */
  static async start(target: string): Promise<PgFaultProxy> {
    const proxy = new PgFaultProxy(target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** The port the proxy listens on. */
  get port(): number {
    return (this.#server.address() as net.AddressInfo).port;
  }

  /** "127.0.0.1:PORT" of the proxy. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Connections open now (a connection counts until both of its sockets are gone). */
  get connections(): number {
    return this.#links.size;
  }

  /** Bytes held now by {@link blackHole}, both directions and every connection together. */
  get heldBytes(): number {
    let bytes = 0;
    for (const link of this.#links) for (const { chunk } of link.held) bytes += chunk?.length ?? 0;
    return bytes;
  }

  /** `databaseUrl` (postgres://…) with its host and port replaced by the proxy's. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.host = this.address;
    return url.toString();
  }

  /** Destroys both sides of every open connection at once; new connections are still accepted. */
  reset(): void {
    for (const link of this.#links) this.#destroy(link);
  }

  /**
   * Partitions the network: from now on the bytes of every connection, existing or new, are held in
   * both directions (neither forwarded nor dropped) and connections stay open, until {@link heal}.
   */
  blackHole(): void {
    this.#blackHoled = true;
  }

  /** Ends the partition: forwards everything held, in order, as TCP retransmission would. */
  heal(): void {
    this.#blackHoled = false;
    for (const link of this.#links) {
      for (const { toServer, chunk } of link.held.splice(0)) {
        if (link.gone) break;
        this.#deliver(link, toServer, chunk);
      }
    }
  }

  /**
   * Resolves once the server has answered every statement it was sent on every open connection (a
   * ReadyForQuery for each): after {@link heal}, the moment every held statement has been run and
   * committed or rolled back. Nothing held counts, so call it after heal.
   */
  settled(): Promise<void> {
    if (this.#isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  /** Resolves once at least `bytes` bytes are held by {@link blackHole} (at once when they are). */
  whenHeld(bytes = 1): Promise<void> {
    if (this.heldBytes >= bytes) return Promise.resolve();
    return new Promise((resolve) => this.#heldWaiters.push({ bytes, resolve }));
  }

  /**
   * Drops the answer to the next `count` statements (default 1, on any connection) whose SQL text, in
   * a Query or Parse message, contains `sql` or matches it: the statement reaches the server, but
   * every byte the server sends back on that connection from then on is swallowed, and once the
   * server has sent the ReadyForQuery that ends the statement (its transaction committed or rolled
   * back, for an autocommit statement or a COMMIT) both sides are destroyed. Resolves with the number
   * of answers dropped once it is `count`; an answer also counts as dropped when its connection is
   * closed before that ReadyForQuery. Rejects with a RangeError when `count` is not a positive integer.
   */
  dropAnswerTo(sql: string | RegExp, count = 1): Promise<number> {
    if (!Number.isInteger(count) || count < 1) {
      return Promise.reject(new RangeError(`count must be a positive integer: ${count}`));
    }
    return new Promise((resolve) => this.#arms.push({ pattern: sql, count, remaining: count, dropped: 0, resolve }));
  }

  /** Destroys every connection and stops listening. */
  async close(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: net.Socket): void {
    const upstream = net.connect(this.#targetPort, this.#host);
    const link: Link = {
      client,
      upstream,
      frontend: new Framer("untyped"),
      backend: new Framer("typed"),
      held: [],
      awaitedReady: 0,
      gone: false,
    };
    this.#links.add(link);
    const wire = (socket: net.Socket, toServer: boolean): void => {
      socket.on("data", (chunk: Buffer) => this.#receive(link, toServer, chunk));
      // An end is a byte in the stream too: a partition holds it behind the data before it.
      socket.on("end", () => this.#receive(link, toServer, null));
      socket.on("error", () => undefined);
      socket.on("close", (hadError) => {
        // A reset or a refused upstream cuts the other side; a clean close waits for the other's end.
        if (hadError) this.#destroy(link);
        else if (client.destroyed && upstream.destroyed) this.#forget(link);
      });
    };
    wire(client, true);
    wire(upstream, false);
  }

  #receive(link: Link, toServer: boolean, chunk: Buffer | null): void {
    if (!this.#blackHoled) {
      this.#deliver(link, toServer, chunk);
      return;
    }
    link.held.push({ toServer, chunk });
    const held = this.heldBytes;
    for (const waiter of this.#heldWaiters.splice(0)) {
      if (held >= waiter.bytes) waiter.resolve();
      else this.#heldWaiters.push(waiter);
    }
  }

  #deliver(link: Link, toServer: boolean, chunk: Buffer | null): void {
    const to = toServer ? link.upstream : link.client;
    if (chunk === null) {
      to.end();
      return;
    }
    if (toServer) {
      link.frontend.push(chunk, (type, body) => this.#fromFrontend(link, type, body));
      to.write(chunk);
      return;
    }
    // Swallowing starts with the bytes that follow the statement, so decide before parsing.
    const swallow = link.readyUntilDestroyed !== undefined;
    link.backend.push(chunk, (type) => this.#fromBackend(link, type));
    if (link.backend.mode === "opaque") link.frontend.mode = "opaque";
    if (!swallow && !link.gone) to.write(chunk);
  }

  #fromFrontend(link: Link, type: string, body: Buffer): void {
    if (type === "") {
      const code = body.readInt32BE(0);
      if (code === sslRequestCode || code === gssEncRequestCode) link.backend.mode = "byte";
      else if (code !== cancelRequestCode) {
        link.frontend.mode = "typed";
        link.awaitedReady += 1;
      }
      return;
    }
    if (type === "Q" || type === "S") link.awaitedReady += 1;
    if ((type !== "Q" && type !== "P") || link.readyUntilDestroyed !== undefined) return;
    // Query: the SQL text; Parse: a statement name, then the SQL text, both null-terminated.
    const start = type === "Q" ? 0 : body.indexOf(0) + 1;
    const sql = body.toString("utf8", start, body.indexOf(0, start));
    const arm = this.#arms.find(({ pattern }) =>
      typeof pattern === "string" ? sql.includes(pattern) : sql.search(pattern) !== -1,
    );
    if (arm === undefined) return;
    arm.remaining -= 1;
    if (arm.remaining === 0) this.#arms.splice(this.#arms.indexOf(arm), 1);
    link.arm = arm;
    // A Query was counted above; a Parse's ReadyForQuery comes after the Sync that follows it.
    link.readyUntilDestroyed = type === "Q" ? link.awaitedReady : link.awaitedReady + 1;
  }

  #isSettled(): boolean {
    for (const link of this.#links) if (link.awaitedReady > 0) return false;
    return true;
  }

  #wakeSettled(): void {
    if (this.#settledWaiters.length === 0 || !this.#isSettled()) return;
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  #fromBackend(link: Link, type: string): void {
    if (type !== "Z" || link.gone) return;
    link.awaitedReady -= 1;
    this.#wakeSettled();
    if (link.readyUntilDestroyed === undefined) return;
    link.readyUntilDestroyed -= 1;
    if (link.readyUntilDestroyed === 0) this.#destroy(link);
  }

  #destroy(link: Link): void {
    link.client.destroy();
    link.upstream.destroy();
    this.#forget(link);
  }

  #forget(link: Link): void {
    if (link.gone) return;
    link.gone = true;
    link.held.length = 0;
    this.#links.delete(link);
    this.#wakeSettled();
    if (link.arm === undefined) return;
    link.arm.dropped += 1;
    if (link.arm.dropped === link.arm.count) link.arm.resolve(link.arm.dropped);
  }
}
