import { expect } from "chai";
import {
  databaseUnavailable,
  isBrokenConnection,
  isDatabaseUnavailable,
  isDeadlinePassed,
} from "../../src/stores/postgres/database-errors.js";

describe("database errors", () => {
  it("takes a full pool's wait, a dropped connection and a read timeout for unavailability, not a bad statement", () => {
    const poolFull = new Error("timeout exceeded when trying to connect");
    expect(isDatabaseUnavailable(poolFull)).to.equal(true);
    expect(isBrokenConnection(poolFull), "no connection broke: the pool was busy").to.equal(false);
    for (const message of ["Connection terminated unexpectedly", "Query read timeout"]) {
      expect(isDatabaseUnavailable(new Error(message)), message).to.equal(true);
      expect(isBrokenConnection(new Error(message)), message).to.equal(true);
    }
    const syntax = Object.assign(new Error('syntax error at or near "SELEC"'), { code: "42601" });
    expect(isDatabaseUnavailable(syntax)).to.equal(false);
    const shutdown = Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
    expect(isDatabaseUnavailable(shutdown)).to.equal(true);
  });

  it("answers a full pool with UNAVAILABLE naming the store and saying the replica is overloaded", () => {
    const error = databaseUnavailable(
      "postgres://app:***@db:5432/runs",
      new Error("timeout exceeded when trying to connect"),
    );
    expect(error.code).to.equal("UNAVAILABLE");
    expect(error.errorType).to.equal("UnavailableError");
    expect(error.details).to.equal(
      "the store at postgres://app:***@db:5432/runs is unavailable: every connection of this replica's pool stayed busy for the whole wait (the replica is overloaded); retry later (the server recovers by itself when it returns)",
    );
  });

  it("recognises the database refusing a write whose deadline passed", () => {
    expect(isDeadlinePassed(Object.assign(new Error("deadline passed"), { code: "P0001" }))).to.equal(true);
    expect(isDeadlinePassed(Object.assign(new Error("queue full"), { code: "P0001" }))).to.equal(false);
  });
});
