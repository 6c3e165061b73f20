import { countdownTool } from "./countdown-tool.js";
import type { DefinedTool } from "./define-tool.js";
import { echoTool } from "./echo-tool.js";
import { jsonPointerTool } from "./json-pointer-tool.js";
import { noopTool } from "./noop-tool.js";
import { sleepTool } from "./sleep-tool.js";

/** The tools every server serves unless told not to, in the "builtin" namespace. */
export const builtinTools: readonly DefinedTool[] = [echoTool, noopTool, sleepTool, countdownTool, jsonPointerTool];
