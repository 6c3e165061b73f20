import { parseArgs } from "node:util";
import { measureRegistryScale } from "./registry-scale.js";

// Entry of the registry-scale case's child process (node --expose-gc): prints its result as JSON.
const { values } = parseArgs({
  options: {
    tools: { type: "string", default: "20000" },
    checkpoints: { type: "string", default: "1000,10000,20000" },
    watchers: { type: "string", default: "1000" },
  },
});
measureRegistryScale(Number(values.tools), values.checkpoints.split(",").map(Number), Number(values.watchers)).then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(
      `registry-scale: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
