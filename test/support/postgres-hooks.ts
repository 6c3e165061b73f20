import { stopSharedPostgres } from "./postgres-server.js";

/** Mocha root hooks: the shared PostgreSQL server stops once every suite is done. */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    await stopSharedPostgres();
  },
};
