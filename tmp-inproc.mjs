import { createToolRuntime } from "./dist/src/runtime.js";
import { builtinTools } from "./dist/src/tools/builtin-tools.js";
const runtime = createToolRuntime({ tools: [...builtinTools] });
const runner = runtime.runners.get("");
runner.activate("builtin.noop");
async function batch(n) {
  const ps = [];
  for (let i = 0; i < n; i++) {
    const { record } = runtime.executions.start({ runner, requireActive: true, toolName: "builtin.noop", inputs: {}, timeoutMs: 0, caller: "bench" });
    ps.push(record.answered);
  }
  await Promise.all(ps);
}
for (let r = 0; r < 3; r++) {
  const t = performance.now(); const N = 20000;
  for (let i = 0; i < N / 100; i++) await batch(100);
  console.log("µs per run", ((performance.now() - t) * 1000 / N).toFixed(1));
}
runtime.close();
