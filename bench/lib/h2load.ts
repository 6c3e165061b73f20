import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, rm } from "node:fs/promises";
import { readProcessCpuMs } from "./proc-cpu.js";
import { percentileOfSorted } from "./stats.js";

/** One h2load run: POST `bodyFile` to `url` for `durationS` seconds, or `requests` times. */
export interface H2loadRun {
  readonly url: string;
  /** The request body, sent as is with every request (`-d`). */
  readonly bodyFile: string;
  /** Request headers, "name: value". */
  readonly headers: readonly string[];
  /** Connections (`-c`). */
  readonly clients: number;
  /** Requests in flight per connection (`-m`): HTTP/2 streams, or HTTP/1.1 pipelining depth. */
  readonly streamsPerClient: number;
  /** Length of the measurement (`-D`), in seconds; ignored when `requests` is set. */
  readonly durationS: number;
  /** Send exactly this many requests (`-n`) instead of loading for `durationS`. */
  readonly requests?: number;
  /** HTTP/1.1 instead of HTTP/2 prior knowledge (`--h1`). */
  readonly http1?: boolean;
  /** Where h2load writes one line per request (`--log-file`); deleted after parsing. */
  readonly logFile: string;
}

/** What an h2load run measured. */
export interface H2loadResult {
  /** Requests completed per second of the measurement, as h2load reports it. */
  readonly requestsPerSecond: number;
  readonly succeeded: number;
  /** Requests that failed, errored or timed out. */
  readonly failed: number;
  /** Responses with a status other than 2xx. */
  readonly non2xx: number;
  /**
   * Requests started but not done when the run's time was up: h2load abandons them (the server may
   * still finish them, or count them as cancelled).
   */
  readonly cutOff: number;
  /** Latencies of the 2xx responses, from the per-request log, in milliseconds. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU time h2load itself used, in milliseconds (sampled every 50 ms; the last bit may be missed). */
  readonly loadGeneratorCpuMs: number;
  /** h2load's summary, for the record. */
  readonly summary: string;
}

function match(output: string, pattern: RegExp, what: string): RegExpMatchArray {
  const found = output.match(pattern);
  if (!found) throw new Error(`h2load printed no ${what}:\n${output}`);
  return found;
}

/** Reads the summary lines h2load prints at the end of a run. Throws when they are missing. */
export function parseH2loadSummary(output: string): Omit<H2loadResult, "p50Ms" | "p99Ms" | "loadGeneratorCpuMs"> {
  const finished = match(output, /finished in [\d.]+\w*, ([\d.]+) req\/s/, "rate");
  const requests = match(
    output,
    /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/,
    "request counts",
  );
  const codes = match(output, /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/, "status codes");
  const summary = output.slice(output.indexOf("finished in")).trim();
  return {
    requestsPerSecond: Number(finished[1]),
    succeeded: Number(requests[4]),
    failed: Number(requests[5]) + Number(requests[6]) + Number(requests[7]),
    non2xx: Number(codes[2]) + Number(codes[3]) + Number(codes[4]),
    cutOff: Number(requests[2]) - Number(requests[3]),
    summary,
  };
}

/**
 * p50 and p99 latency, in milliseconds, of the 2xx requests in an h2load log file (tab-separated:
 * start time in µs, HTTP status, µs until the end of the response). Requests still in flight when
 * the run stopped are logged with status 0 and skipped.
 */
export function latenciesFromLog(log: string): { p50Ms: number; p99Ms: number; count: number } {
  const micros: number[] = [];
  for (const line of log.split("\n")) {
    const [, status, duration] = line.split("\t");
    if (status !== undefined && status.startsWith("2") && duration !== undefined) micros.push(Number(duration));
  }
  const sorted = Float64Array.from(micros).sort();
  return {
    p50Ms: percentileOfSorted(sorted, 50) / 1000,
    p99Ms: percentileOfSorted(sorted, 99) / 1000,
    count: sorted.length,
  };
}

/** Runs h2load once and parses its summary and per-request log. Throws when h2load fails. */
export async function runH2load(run: H2loadRun): Promise<H2loadResult> {
  const args = [
    ...(run.requests === undefined ? ["-D", `${Math.round(run.durationS * 1000)}ms`] : ["-n", String(run.requests)]),
    "-c",
    String(run.clients),
    "-m",
    String(run.streamsPerClient),
    "-t",
    "1",
    "-d",
    run.bodyFile,
    "--log-file",
    run.logFile,
    ...run.headers.flatMap((header) => ["-H", header]),
    ...(run.http1 ? ["--h1"] : []),
    run.url,
  ];
  const child = spawn("h2load", args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  let cpuMs = 0;
  const pid = child.pid;
  const sampler = setInterval(() => {
    const sample = pid === undefined ? undefined : readProcessCpuMs(pid);
    if (sample !== undefined) cpuMs = sample;
  }, 50);
  const [code] = (await once(child, "exit")) as [number | null];
  clearInterval(sampler);
  if (code !== 0) throw new Error(`h2load ${args.join(" ")} exited with ${code}:\n${output}`);
  const summary = parseH2loadSummary(output);
  const latencies = latenciesFromLog(await readFile(run.logFile, "utf8"));
  await rm(run.logFile, { force: true });
  return { ...summary, p50Ms: latencies.p50Ms, p99Ms: latencies.p99Ms, loadGeneratorCpuMs: cpuMs };
}
