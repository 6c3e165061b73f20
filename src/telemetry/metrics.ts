import type { DescMethod } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { performance } from "node:perf_hooks";
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { ExecutionObserver } from "../executions/execution-manager.js";
import type { ToolRegistry } from "../registry/tool-registry.js";
import type { RunObserver } from "../runner/run-observer.js";
import type { CallObserver } from "../server/call-pipeline.js";
import { TalliedCounter, type CounterSeries } from "./tallied-counter.js";
import { TalliedHistogram, type HistogramSeries } from "./tallied-histogram.js";

/** The server's Prometheus metrics and the observers that feed them. */
export interface ServerMetrics {
  /** The prom-client registry to expose at /metrics. */
  readonly registry: Registry;
  readonly callObserver: CallObserver;
  /** Handler runs (attempts): the in-flight gauge and the handler duration. */
  readonly runObserver: RunObserver;
  /** Runs as wholes: counted once each by outcome, including those that never reached a handler. */
  readonly executionObserver: ExecutionObserver;
  /** Counts and times the requests to the MCP gateway. */
  readonly mcpObserver: McpRequestObserver;
}

/**
 * Observes one request to the MCP gateway: call it when the request arrives, and the function it
 * returns once when the request ends, with the MCP method it carried (from a bounded set of
 * names: the client chooses the method) and the status code its outcome maps to (0 for OK).
 */
export type McpRequestObserver = () => (method: string, code: number) => void;

/** The service label of MCP requests in the RPC metrics (their protocol label is "mcp" too). */
export const mcpServiceLabel = "mcp";

const durationBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Name of a status code for labels, as gRPC names it: "OK", "NOT_FOUND", "CANCELLED"… */
export function codeName(code: number): string {
  if (code === 0) return "OK";
  // Connect spells this one "Canceled"; gRPC's name, which dashboards and alerts use, is CANCELLED.
  if (code === (Code.Canceled as number)) return "CANCELLED";
  const name = Code[code as Code];
  return name === undefined ? String(code) : name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/**
 * Creates the metrics (all prefixed `toolruntime_`, plus the Node process defaults):
 * - `rpc_requests_total{service,method,protocol,code}` and `rpc_duration_seconds{service,method,protocol}`;
 *   requests to the MCP gateway count there too, as service "mcp", protocol "mcp" and the MCP
 *   method (see {@link McpRequestObserver});
 * - `executions_total{tool,outcome}`: every run once, at its end (outcome: "success" or the error
 *   type, QueueTimeoutError and ApprovalRejectedError included);
 * - `execution_duration_seconds{tool}` and `executions_in_flight`: handler attempts;
 * - `executions_queued`, read from `admission()` at each scrape;
 * - `registry_tools{registry}`, read from `listRegistries()` at each scrape.
 */
export function createServerMetrics(
  listRegistries: () => readonly ToolRegistry[],
  admission: () => { readonly queued: number; readonly running: number },
): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new TalliedCounter({
    name: "toolruntime_rpc_requests_total",
    help: "RPCs handled, by service, method, protocol and final status code.",
    labelNames: ["service", "method", "protocol", "code"],
    registers: [registry],
  });
  const rpcDuration = new TalliedHistogram({
    name: "toolruntime_rpc_duration_seconds",
    help: "RPC duration, from the call reaching the service to its last message, in seconds.",
    labelNames: ["service", "method", "protocol"],
    buckets: durationBuckets,
    registers: [registry],
  });
  const executions = new TalliedCounter({
    name: "toolruntime_executions_total",
    help: "Runs ended, by tool and outcome (success or the error type), each counted once whatever ended it.",
    labelNames: ["tool", "outcome"],
    registers: [registry],
  });
  const executionDuration = new TalliedHistogram({
    name: "toolruntime_execution_duration_seconds",
    help: "Handler wall-clock time of tool executions, in seconds.",
    labelNames: ["tool"],
    buckets: durationBuckets,
    registers: [registry],
  });
  const inFlight = new Gauge({
    name: "toolruntime_executions_in_flight",
    help: "Tool executions running now.",
    registers: [registry],
  });
  new Gauge({
    name: "toolruntime_executions_queued",
    help: "Runs waiting for an admission slot.",
    registers: [registry],
    collect() {
      this.set(admission().queued);
    },
  });
  new Gauge({
    name: "toolruntime_registry_tools",
    help: "Tools registered, by registry.",
    labelNames: ["registry"],
    registers: [registry],
    collect() {
      for (const toolRegistry of listRegistries()) this.set({ registry: toolRegistry.name }, toolRegistry.size);
    },
  });
  // Each method's series are resolved once (prom-client checks and hashes whatever label object
  // it is given, so doing it per call cost as much as the rest of the metrics).
  const callSeries = new Map<string, CallSeries>();
  const seriesOf = (service: string, method: string, protocol: string): CallSeries => {
    const key = `${service}/${method}/${protocol}`;
    let series = callSeries.get(key);
    if (!series) {
      const labels = { service, method, protocol };
      series = {
        duration: rpcDuration.series(labels),
        byCode: new Map(),
        count: (code) => requests.series({ ...labels, code: codeName(code) }),
      };
      callSeries.set(key, series);
    }
    return series;
  };
  const methodSeries = new WeakMap<DescMethod, Map<string, CallSeries>>();
  const end = (series: CallSeries, started: number, code: number): void => {
    series.duration.observe((performance.now() - started) / 1000);
    let counted = series.byCode.get(code);
    if (!counted) {
      counted = series.count(code);
      series.byCode.set(code, counted);
    }
    counted.inc();
  };
  // By tool, then outcome: both names are strings kept elsewhere (the spec's, the error type's
  // constant), whose hashes V8 caches, where a key joined from the two was a new string to hash
  // for every run.
  const outcomes = new Map<string, Map<string, CounterSeries>>();
  const toolDurations = new Map<string, HistogramSeries>();
  return {
    registry,
    callObserver: (method, context) => {
      let byProtocol = methodSeries.get(method);
      if (!byProtocol) methodSeries.set(method, (byProtocol = new Map<string, CallSeries>()));
      const protocol = context.protocolName;
      let series = byProtocol.get(protocol);
      if (!series) byProtocol.set(protocol, (series = seriesOf(method.parent.typeName, method.name, protocol)));
      const started = performance.now();
      const known = series;
      return (code) => end(known, started, code);
    },
    mcpObserver: () => {
      const started = performance.now();
      return (method, code) => end(seriesOf(mcpServiceLabel, method, mcpServiceLabel), started, code);
    },
    runObserver: {
      onRunStart: () => inFlight.inc(),
      onRunEnd: (info, result) => {
        inFlight.dec();
        const tool = info.spec.name;
        let series = toolDurations.get(tool);
        if (!series) toolDurations.set(tool, (series = executionDuration.series({ tool })));
        series.observe(result.durationMs / 1000);
      },
    },
    executionObserver: {
      onExecutionEnd: (record, result) => {
        const outcome = result.success ? "success" : (result.error?.errorType ?? "unknown");
        const tool = record.toolName;
        let byOutcome = outcomes.get(tool);
        if (!byOutcome) outcomes.set(tool, (byOutcome = new Map<string, CounterSeries>()));
        let series = byOutcome.get(outcome);
        if (!series) byOutcome.set(outcome, (series = executions.series({ tool, outcome })));
        series.inc();
      },
    },
  };
}

/** The series of one method on one protocol: its duration, and its request counts by status code. */
interface CallSeries {
  readonly duration: HistogramSeries;
  readonly byCode: Map<number, CounterSeries>;
  readonly count: (code: number) => CounterSeries;
}
