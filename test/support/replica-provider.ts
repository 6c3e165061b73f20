// A tool provider as a child process for the multi-replica suite: serves "remote.steps", which
// reports `steps` progress events (default 3) `interval_ms` apart and returns the provider's pid.
// Prints "connected" once the server welcomed it.
import { createProvider } from "../../src/providers/create-provider.js";
import { defineTool } from "../../src/tools/define-tool.js";

const address = process.argv[2] ?? "";
const provider = createProvider({
  address,
  providerName: "replicated",
  tools: [
    defineTool({
      name: "remote.steps",
      handler: async (inputs, context) => {
        const steps = Number(inputs["steps"] ?? 3);
        for (let step = 1; step <= steps; step++) {
          context.reportProgress({ fraction: step / steps, message: `step ${step}` });
          await new Promise((resolve) => setTimeout(resolve, Number(inputs["interval_ms"] ?? 20)));
        }
        return { pid: process.pid };
      },
    }),
  ],
});
provider.connected.then(
  () => process.stdout.write("connected\n"),
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);
