import { stopSharedPostgres } from "./postgres-server.js";

/**
 * Mocha root hooks, loaded by `.mocharc.json`: after the whole run, stop the shared PostgreSQL
 * server if a suite started one, so no server outlives the tests.
 */
export const mochaHooks: Mocha.RootHookObject = {
  async afterAll() {
    await stopSharedPostgres();
  },
};
