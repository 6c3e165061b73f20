import { createToolRuntime } from "./dist/src/runtime.js";
import { builtinTools } from "./dist/src/tools/builtin-tools.js";
const runtime = createToolRuntime({ tools: [...builtinTools] });
const runner = runtime.runners.get("");
runner.activate("builtin.noop");
const { record } = runtime.executions.start({ runner, requireActive: true, toolName: "builtin.noop", inputs: {}, timeoutMs: 0, caller: "bench" });
const r = await record.answered;
console.log(Object.keys(r.metadata).length, %HasFastProperties(r.metadata), %HasFastProperties(r));
runtime.close();
