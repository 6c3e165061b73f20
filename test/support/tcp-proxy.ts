import net from "node:net";

/**
 * A TCP proxy on an ephemeral port of 127.0.0.1 in front of `target` ("host:port"), for tests that
 * drop connections: `pause()` cuts every connection and refuses new ones until `resume()`.
 */
export class TcpProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  #paused = false;
  #host = "";
  #port = 0;

  private constructor(target: string) {
    this.retarget(target);
    this.#server = net.createServer((client) => {
      if (this.#paused) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.#port, this.#host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.once("close", () => this.#sockets.delete(socket));
        socket.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.once("close", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
    });
  }

  /** Starts a proxy to `target`. */
  static async start(target: string): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** "127.0.0.1:PORT" of the proxy. */
  get address(): string {
    return `127.0.0.1:${(this.#server.address() as net.AddressInfo).port}`;
  }

  /** Sends new connections to `target` ("host:port") from now on (a load balancer moving on). */
  retarget(target: string): void {
    const separator = target.lastIndexOf(":");
    this.#host = target.slice(0, separator);
    this.#port = Number(target.slice(separator + 1));
  }

  /** Cuts every connection and refuses new ones. */
  pause(): void {
    this.#paused = true;
    for (const socket of this.#sockets) socket.destroy();
  }

  /** Accepts connections again. */
  resume(): void {
    this.#paused = false;
  }

  /** Cuts everything and stops listening. */
  async close(): Promise<void> {
    this.pause();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
