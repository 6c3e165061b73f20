import { readFileSync } from "node:fs";

/** Resident memory of a process, in bytes, from /proc/<pid>/status. */
export interface ProcessMemory {
  /** VmRSS: resident now. */
  readonly rssBytes: number;
  /** VmHWM: the peak resident size so far. */
  readonly peakRssBytes: number;
}

/** The resident memory of process `pid`; undefined when it is gone. */
export function readProcessMemory(pid: number): ProcessMemory | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { rssBytes: kib("VmRSS") * 1024, peakRssBytes: kib("VmHWM") * 1024 };
}
