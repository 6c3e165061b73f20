import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

let ticksPerSecond: number | undefined;

/** Clock ticks per second of /proc CPU times (`getconf CLK_TCK`, almost always 100). */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    let ticks = 100;
    try {
      const parsed = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
      if (Number.isInteger(parsed) && parsed > 0) ticks = parsed;
    } catch {
      // getconf is missing: Linux has used 100 on every common platform for decades.
    }
    ticksPerSecond = ticks;
  }
  return ticksPerSecond;
}

/**
 * CPU time (user + system) that process `pid` has used so far, in milliseconds, from fields 14 and
 * 15 of /proc/<pid>/stat. Undefined when the process is gone.
 */
export function readProcessCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state), so utime (field 14) is fields[11] and stime (15) is fields[12].
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / clockTicksPerSecond() : undefined;
}
