// A tool provider as a child process, for tests that kill it: serves "remote.block", which reports
// progress and then waits until cancelled. Prints "connected" once the server welcomed it.
import { createProvider } from "../../src/providers/create-provider.js";
import { defineTool } from "../../src/tools/define-tool.js";

const address = process.argv[2] ?? "";
const provider = createProvider({
  address,
  providerName: "child",
  tools: [
    defineTool({
      name: "remote.block",
      handler: (_inputs, context) =>
        new Promise((_resolve, reject) => {
          context.reportProgress({ fraction: 0.1, message: "blocking" });
          context.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
        }),
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
