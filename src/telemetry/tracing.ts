import {
  context as otelContext,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type TextMapGetter,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { RunObserver } from "../runner/run-observer.js";
import { requestHeaderValue, traceParentKey } from "../server/call-context.js";
import type { CallObserver } from "../server/call-pipeline.js";
import { codeName } from "./metrics.js";

/** Options of {@link createTracing}. */
export interface TracingOptions {
  /** OTLP/HTTP endpoint to export spans to, e.g. "http://collector:4318/v1/traces"; none when absent. */
  readonly otlpEndpoint?: string | undefined;
  /** More span processors (tests use an in-memory exporter). */
  readonly spanProcessors?: readonly SpanProcessor[] | undefined;
}

/** OpenTelemetry spans for calls and runs, with W3C trace context propagated from the caller. */
export interface ServerTracing {
  readonly callObserver: CallObserver;
  readonly runObserver: RunObserver;
  /** Flushes and stops the exporters. */
  shutdown(): Promise<void>;
}

const headersGetter: TextMapGetter<Headers> = {
  get: (carrier, key) => carrier.get(key) ?? undefined,
  keys: (carrier) => [...carrier.keys()],
};
const propagator = new W3CTraceContextPropagator();

/**
 * Creates a tracer whose server span for each call continues the caller's `traceparent`, and whose
 * span for each run is a child of its call's span. The call span's own traceparent is put in the
 * call context, so the run (and its result's metadata) carries the same trace id. Without an
 * exporter or a span processor, no spans are made and the caller's traceparent passes through.
 */
export function createTracing(options: TracingOptions = {}): ServerTracing {
  const processors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  if (options.otlpEndpoint)
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: options.otlpEndpoint })));
  if (processors.length === 0) return passThroughTracing();
  const provider = new BasicTracerProvider({ spanProcessors: processors });
  const tracer = provider.getTracer("toolruntime");
  const runSpans = new Map<string, Span>();
  return {
    callObserver: (method, context) => {
      const parent = propagator.extract(ROOT_CONTEXT, context.requestHeader, headersGetter);
      const span = tracer.startSpan(
        `${method.parent.typeName}/${method.name}`,
        {
          kind: SpanKind.SERVER,
          attributes: { "rpc.system": "grpc", "rpc.service": method.parent.typeName, "rpc.method": method.name },
        },
        parent,
      );
      context.values.set(traceParentKey, traceParentOf(span));
      return (code) => {
        span.setAttribute("rpc.grpc.status_code", code);
        if (code !== 0) span.setStatus({ code: SpanStatusCode.ERROR, message: codeName(code) });
        span.end();
      };
    },
    runObserver: {
      onRunStart(info) {
        const carrier = new Headers(info.traceParent ? { traceparent: info.traceParent } : {});
        const parent = propagator.extract(ROOT_CONTEXT, carrier, headersGetter);
        const span = tracer.startSpan(
          `run ${info.spec.name}`,
          {
            attributes: {
              "toolruntime.tool": info.spec.name,
              "toolruntime.execution_id": info.executionId,
              "toolruntime.runner": info.runnerName,
              "toolruntime.caller": info.caller,
            },
          },
          parent,
        );
        runSpans.set(info.executionId, span);
      },
      onRunEnd(info, result) {
        const span = runSpans.get(info.executionId);
        if (!span) return;
        runSpans.delete(info.executionId);
        span.setAttribute("toolruntime.outcome", result.success ? "success" : (result.error?.errorType ?? "unknown"));
        if (!result.success) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error?.details ?? "" });
        span.end();
      },
    },
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Tracing with nowhere to send spans: no spans are made (they would cost every call and go
 * nowhere), but a caller's valid `traceparent` still reaches the run, so its result's metadata
 * carries the caller's trace id.
 */
function passThroughTracing(): ServerTracing {
  return {
    callObserver: (_method, context) => {
      const incoming = requestHeaderValue(context, "traceparent");
      if (incoming !== null && /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(incoming)) {
        context.values.set(traceParentKey, incoming);
      }
      return () => undefined;
    },
    runObserver: {},
    shutdown: () => Promise.resolve(),
  };
}

/** The W3C traceparent header value that names `span` as the parent. */
function traceParentOf(span: Span): string {
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(otelContext.active(), span), carrier, {
    set: (target: Record<string, string>, key: string, value: string) => (target[key] = value),
  });
  return carrier["traceparent"] ?? "";
}
