import { expect } from "chai";
import { existsSync } from "node:fs";
import pg from "pg";
import { sharedPostgres, startPostgres, type PostgresServer } from "../support/postgres-server.js";

/** Runs `sql` on a fresh connection to `url` and returns the rows. */
async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe("PostgresServer", () => {
  let server: PostgresServer;

  before(async () => {
    server = await sharedPostgres();
  });

  it("answers SELECT 1 at its url, on its own port of 127.0.0.1 rather than the system's 5432", async () => {
    expect(server.url).to.equal(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
    expect(server.port).to.not.equal(5432);
    expect(await query(server.url, "SELECT 1 AS one")).to.deep.equal([{ one: 1 }]);
  });

  it("listens on 127.0.0.1 only", async () => {
    expect(await query(server.url, "SHOW listen_addresses")).to.deep.equal([{ listen_addresses: "127.0.0.1" }]);
  });

  it("is the same server for every caller in the process", async () => {
    expect(await sharedPostgres()).to.equal(server);
  });

  describe("createDatabase()", () => {
    it("returns distinct databases, so a table created in one is absent from the other", async () => {
      const first = await server.createDatabase("contract");
      const second = await server.createDatabase("contract");
      expect(first).to.not.equal(second);
      expect(first).to.match(new RegExp(`^postgres://postgres@127\\.0\\.0\\.1:${server.port}/contract_\\d+$`));
      expect(await query(first, "SELECT current_database() AS name")).to.deep.equal([{ name: first.split("/").pop() }]);

      await query(first, "CREATE TABLE only_here (id int)");
      const tables = "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'only_here'";
      expect(await query(first, tables)).to.deep.equal([{ n: 1 }]);
      expect(await query(second, tables)).to.deep.equal([{ n: 0 }]);
    });

    it("rejects a prefix that is not a plain lowercase identifier", async () => {
      let caught: unknown;
      await server.createDatabase('x"; DROP DATABASE postgres; --').catch((error: unknown) => (caught = error));
      expect(caught).to.be.instanceOf(Error);
      expect((caught as Error).message).to.contain("database prefix must be lowercase letters, digits and _");
    });
  });

  describe("stop()", () => {
    it("shuts its server down and removes its directory", async () => {
      const own = await startPostgres();
      expect(existsSync(own.directory)).to.equal(true);
      await own.stop();
      expect(existsSync(own.directory)).to.equal(false);
      let caught: unknown;
      await query(own.url, "SELECT 1").catch((error: unknown) => (caught = error));
      expect((caught as NodeJS.ErrnoException | undefined)?.code).to.equal("ECONNREFUSED");
      await own.stop();
    });
  });
});
