/**
 * How long the process may take, after the last root hook, to end by itself: closing what the
 * tests closed (sockets, child processes, the shared PostgreSQL server) takes well under a second.
 */
export const runEndGraceMs = 3000;

/**
 * Mocha root hooks, loaded by `.mocharc.json` after every other: mocha runs with `"exit": false`,
 * so that a run ends only when the tests left nothing open (a server, socket, timer or child
 * process a test forgot is a bug). Alone, that turned such a leak, and every failing test that
 * skipped its own cleanup, into a run that never ends. This watchdog keeps the check and ends
 * the hang: if the process is still there {@link runEndGraceMs} after the last test, it prints
 * what holds it and exits with mocha's failure count, or 1 when every test passed. Its timer is
 * unref'd, so a run that left nothing open ends at once, as before.
 */
export const mochaHooks: Mocha.RootHookObject = {
  afterAll() {
    setTimeout(() => {
      const holding = process
        .getActiveResourcesInfo()
        .filter((resource) => resource !== "TTYWrap")
        .join(", ");
      process.stderr.write(
        `\nmocha: still running ${runEndGraceMs} ms after the last test; what holds it: ${holding || "(nothing Node can name)"}. A test left it open: close it in the test's finally or after hook.\n`,
      );
      // Mocha sets the exit code (its failure count) in an "exit" listener of its own, added when
      // the run ended; this one runs after it and fails a run that passed but leaked.
      process.on("exit", () => {
        if (!process.exitCode) process.exitCode = 1;
      });
      process.exit();
    }, runEndGraceMs).unref();
  },
};
