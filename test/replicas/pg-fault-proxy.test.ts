import { expect } from "chai";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { PgFaultProxy } from "../support/pg-fault-proxy.js";
import { sharedPostgres } from "../support/postgres-server.js";

/** Awaits `promise`, expects it to reject, and returns the error. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("the promise should have rejected");
}

/** Tracks whether `promise` settled, without handling its rejection for the caller. */
function watch<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  return { promise: watched, settled: () => settled };
}

describe("PgFaultProxy", function () {
  this.timeout(30_000);
  let databaseUrl: string;
  let proxyUrl: string;
  let proxy: PgFaultProxy;
  let direct: pg.Client;
  const clients: pg.Client[] = [];

  /** Opens a client; the error listener keeps a connection the proxy destroys from crashing mocha. */
  async function connect(connectionString: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString });
    client.on("error", () => undefined);
    clients.push(client);
    await client.connect();
    return client;
  }

  /** The ids in table `t`, read straight from the database, not through the proxy. */
  async function committedIds(): Promise<number[]> {
    const result = await direct.query<{ id: number }>("SELECT id FROM t ORDER BY id");
    return result.rows.map((row) => row.id);
  }

  before(async () => {
    databaseUrl = await (await sharedPostgres()).createDatabase("proxy");
    proxy = await PgFaultProxy.start(new URL(databaseUrl).host);
    proxyUrl = proxy.urlFor(databaseUrl);
    direct = new pg.Client({ connectionString: databaseUrl });
    await direct.connect();
    await direct.query("CREATE TABLE t (id int PRIMARY KEY)");
  });

  beforeEach(async () => {
    await direct.query("TRUNCATE t");
  });

  afterEach(async () => {
    proxy.heal();
    await Promise.all(clients.splice(0).map((client) => client.end()));
    proxy.reset();
  });

  after(async () => {
    await direct?.end();
    await proxy?.close();
  });

  describe("urlFor()", () => {
    it("replaces only the host and port of a postgres:// URL with the proxy's", () => {
      const name = new URL(databaseUrl).pathname;
      expect(proxyUrl).to.equal(`postgres://postgres@127.0.0.1:${proxy.port}${name}`);
      expect(proxy.address).to.equal(`127.0.0.1:${proxy.port}`);
    });
  });

  describe("forwarding", () => {
    it("passes statements and answers through unchanged, large rows included", async () => {
      const client = await connect(proxyUrl);
      expect(proxy.connections).to.equal(1);
      await client.query("CREATE TABLE passthrough (id int PRIMARY KEY, name text)");
      await client.query("INSERT INTO passthrough VALUES ($1, $2)", [7, "seven"]);
      const read = await client.query("SELECT id, name FROM passthrough");
      expect(read.rows).to.deep.equal([{ id: 7, name: "seven" }]);
      // A DataRow far larger than a TCP chunk: the parse buffer must follow it across chunks.
      const big = await client.query<{ big: string }>("SELECT repeat('x', 1000000) AS big");
      expect(big.rows[0]!.big).to.equal("x".repeat(1_000_000));
    });
  });

  describe("dropAnswerTo()", () => {
    it("lets a parameterised INSERT commit, cuts the connection before its answer, and only once", async () => {
      const dropped = proxy.dropAnswerTo("INSERT INTO t");
      const client = await connect(proxyUrl);
      await client.query("SELECT 1"); // statements that do not match are answered
      const error = await rejection(client.query("INSERT INTO t (id) VALUES ($1)", [1]));
      expect(error.message).to.equal("Connection terminated unexpectedly");
      expect(await dropped).to.equal(1);
      expect(await committedIds()).to.deep.equal([1]);
      expect(proxy.connections).to.equal(0);

      const second = await connect(proxyUrl);
      await second.query("INSERT INTO t (id) VALUES ($1)", [2]);
      expect(await committedIds()).to.deep.equal([1, 2]);
    });

    it("drops the answer to a simple-query COMMIT after the transaction committed", async () => {
      const dropped = proxy.dropAnswerTo(/^COMMIT$/);
      const client = await connect(proxyUrl);
      await client.query("BEGIN");
      await client.query("INSERT INTO t (id) VALUES (3)");
      const error = await rejection(client.query("COMMIT"));
      expect(error.message).to.equal("Connection terminated unexpectedly");
      expect(await dropped).to.equal(1);
      expect(await committedIds()).to.deep.equal([3]);
    });

    it("rejects a count that is not a positive integer with a RangeError", async () => {
      const error = await rejection(proxy.dropAnswerTo("x", 0));
      expect(error).to.be.instanceOf(RangeError);
      expect(error.message).to.equal("count must be a positive integer: 0");
    });
  });

  describe("blackHole() and heal()", () => {
    it("holds a statement and a new connection until heal(), then delivers both", async () => {
      const client = await connect(proxyUrl);
      proxy.blackHole();
      const insert = watch(client.query("INSERT INTO t (id) VALUES ($1)", [4]));
      // Racing the INSERT itself makes a proxy that forwards fail here rather than time out.
      await Promise.race([proxy.whenHeld(), insert.promise]);
      const heldByInsert = proxy.heldBytes;
      const late = watch(connect(proxyUrl));
      // The new connection is accepted, but its StartupMessage is held like everything else.
      await Promise.race([proxy.whenHeld(heldByInsert + 1), late.promise]);
      expect(proxy.connections).to.equal(2);

      // A round trip to the database that the held INSERT would have beaten had it been forwarded.
      expect(await committedIds()).to.deep.equal([]);
      expect(insert.settled(), "the INSERT settled during the partition").to.equal(false);
      expect(late.settled(), "the new connection settled during the partition").to.equal(false);

      proxy.heal();
      await insert.promise;
      expect(await committedIds()).to.deep.equal([4]);
      const lateClient = await late.promise;
      expect((await lateClient.query("SELECT 1 AS one")).rows).to.deep.equal([{ one: 1 }]);
      expect(proxy.heldBytes).to.equal(0);
    });
  });

  describe("reset()", () => {
    it("makes an in-flight pg_sleep(5) reject at once, and new clients connect afterwards", async () => {
      const client = await connect(proxyUrl);
      const sleep = "SELECT pg_sleep(5)";
      const sleeping = watch(client.query(sleep));
      // Only the server can tell the statement is running: poll its activity, a bounded number of times.
      let running = false;
      for (let attempt = 0; attempt < 1000 && !running; attempt += 1) {
        const activity = await direct.query<{ count: number }>(
          "SELECT count(*)::int AS count FROM pg_stat_activity WHERE query = $1 AND state = 'active'",
          [sleep],
        );
        running = activity.rows[0]!.count === 1;
      }
      expect(running, "pg_sleep(5) never started").to.equal(true);

      const resetAt = performance.now();
      proxy.reset();
      expect(proxy.connections).to.equal(0);
      const error = await rejection(sleeping.promise);
      expect(error.message).to.equal("Connection terminated unexpectedly");
      expect(performance.now() - resetAt).to.be.lessThan(1000);

      const next = await connect(proxyUrl);
      expect((await next.query("SELECT 1 AS one")).rows).to.deep.equal([{ one: 1 }]);
      expect(proxy.connections).to.equal(1);
    });
  });
});
