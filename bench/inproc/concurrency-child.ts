import { parseArgs } from "node:util";
import { measureConcurrency } from "./concurrency.js";

// Entry of the concurrency case's child process (node --expose-gc): prints its result as JSON.
const { values } = parseArgs({
  options: { runs: { type: "string", default: "2000" }, "sleep-ms": { type: "string", default: "1000" } },
});
measureConcurrency(Number(values.runs), Number(values["sleep-ms"])).then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(`concurrency: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
