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
 * From /proc/<pid>/stat: the parent's pid, the CPU time (user + system) the process has used so
 * far, and that of its children it has waited for, in milliseconds. Undefined when it is gone.
 */
export function readProcStat(pid: number | string): { ppid: number; cpuMs: number; reapedCpuMs: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  // fields[0] is field 3 (state): ppid (field 4) is fields[1], utime and stime (14, 15) fields[11]
  // and [12], cutime and cstime (16, 17) fields[13] and [14].
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const toMs = (ticks: number): number => (ticks * 1000) / clockTicksPerSecond();
  return {
    ppid: Number(fields[1]),
    cpuMs: toMs(Number(fields[11]) + Number(fields[12])),
    reapedCpuMs: toMs(Number(fields[13]) + Number(fields[14])),
  };
}

/** CPU time (user + system) that process `pid` has used so far, in milliseconds; undefined when it is gone. */
export function readProcessCpuMs(pid: number): number | undefined {
  const cpuMs = readProcStat(pid)?.cpuMs;
  return cpuMs !== undefined && Number.isFinite(cpuMs) ? cpuMs : undefined;
}
