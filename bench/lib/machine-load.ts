import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { clockTicksPerSecond } from "./proc-cpu.js";

/** How busy the whole machine was during one measurement window. */
export interface MachineLoad {
  /** Busy share of all CPUs (everything but idle and iowait, from /proc/stat), 0–100. */
  readonly busyPct: number;
  /** Busy CPU time over wall time: 1 is one core's worth. */
  readonly busyCores: number;
  /**
   * Busy cores not used by the processes the bench knows of in the window (the server under test and
   * the load generator): other engineers' work, the kernel, the bench's own bookkeeping. NaN when the
   * window gave no figures for those processes.
   */
  readonly otherCores: number;
  /** The 1-minute load average (/proc/loadavg) at the end of the window. */
  readonly loadAvg1m: number;
  readonly cpus: number;
}

interface CpuTicks {
  readonly busy: number;
  readonly total: number;
}

function readCpuTicks(): CpuTicks {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user).
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

function readLoadAvg1m(): number {
  return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
}

/** A window opened by {@link openLoadWindow}. */
export interface LoadWindow {
  /**
   * Closes the window. `knownCpuMs` is the CPU time the bench's own processes (server, load
   * generator) used in it, subtracted to give {@link MachineLoad.otherCores}.
   */
  readonly close: (knownCpuMs?: number) => MachineLoad;
}

/** Starts measuring the machine's CPU use (all processes) from now until the window is closed. */
export function openLoadWindow(): LoadWindow {
  const before = readCpuTicks();
  const began = performance.now();
  return {
    close: (knownCpuMs) => {
      const after = readCpuTicks();
      const wallMs = performance.now() - began;
      const total = after.total - before.total;
      const busy = after.busy - before.busy;
      const busyMs = (busy * 1000) / clockTicksPerSecond();
      const busyCores = wallMs > 0 ? busyMs / wallMs : Number.NaN;
      return {
        busyPct: total > 0 ? (100 * busy) / total : Number.NaN,
        busyCores,
        otherCores: knownCpuMs === undefined ? Number.NaN : Math.max(0, (busyMs - knownCpuMs) / wallMs),
        loadAvg1m: readLoadAvg1m(),
        cpus: cpus().length,
      };
    },
  };
}
