import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextKey, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { Metadata } from "@grpc/grpc-js";
import { Cancellation } from "../async/cancellation.js";
import { metadataToHeaders } from "./grpc-status.js";

/**
 * A call's deadline is taken as passed when its signal aborts this close to it (ms): grpc-js ends
 * the call with DEADLINE_EXCEEDED by a timer that starts when the request arrives, so it fires a
 * moment after the client's own.
 */
const deadlineToleranceMs = 100;

/** What a call on the gRPC port is built from. */
export interface GrpcCallFacts {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly url: string;
  readonly metadata: Metadata;
  /** The call's deadline (epoch ms), or Infinity. */
  readonly deadlineMs: number;
  readonly values: ContextValues;
}

/**
 * The HandlerContext of one call on the gRPC port, built for what a call costs: a Cancellation
 * whose AbortSignal is made only when `signal` is read (the run path listens through
 * `callCancellation`), no timer (grpc-js enforces the deadline, and its "cancelled" event aborts
 * with DEADLINE_EXCEEDED as the reason when the deadline passed), request headers converted from
 * the metadata only when read, response headers only when written. Connect's own context costs
 * three AbortControllers, a timer and three Headers per call.
 */
export class GrpcHandlerContext implements HandlerContext {
  readonly protocolName = "grpc";
  readonly requestMethod = "POST";
  readonly service: DescService;
  readonly method: DescMethod;
  readonly url: string;
  readonly values: ContextValues;
  readonly #metadata: Metadata;
  readonly #deadlineMs: number;
  /** The call's end; see callCancellation. */
  readonly cancellation = new Cancellation();
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;
  /** Whether the call's response (or its end) was sent: see {@link markAnswered}. */
  #answered = false;

  constructor(facts: GrpcCallFacts) {
    this.service = facts.service;
    this.method = facts.method;
    this.url = facts.url;
    this.values = facts.values;
    this.#metadata = facts.metadata;
    this.#deadlineMs = facts.deadlineMs;
  }

  get signal(): AbortSignal {
    return this.cancellation.signal;
  }

  timeoutMs(): number | undefined {
    return Number.isFinite(this.#deadlineMs) ? this.#deadlineMs - Date.now() : undefined;
  }

  get requestHeader(): Headers {
    return (this.#requestHeader ??= metadataToHeaders(this.#metadata));
  }

  /** One request header's value, read from the metadata without building Headers. */
  headerValue(name: string): string | null {
    if (this.#requestHeader) return this.#requestHeader.get(name);
    // As metadataToHeaders does: the first value of a text entry.
    const value = this.#metadata.get(name)[0];
    return typeof value === "string" ? value : null;
  }

  get responseHeader(): Headers {
    return (this.#responseHeader ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.#responseTrailer ??= new Headers());
  }

  /**
   * The call's response or its end was sent. grpc-js emits "cancelled" after some calls that
   * ended normally too: from now on that concerns nothing any more ({@link cancelledByPeer} does
   * nothing). A flag here rather than a WeakSet of calls, whose entries the collector treats as
   * ephemerons.
   */
  markAnswered(): void {
    this.#answered = true;
  }

  /** Ends the call's signal with `reason`, once. */
  abort(reason: unknown): void {
    this.cancellation.abort(reason);
  }

  /**
   * The client went away, or grpc-js ended the call at its deadline: the signal aborts with
   * DEADLINE_EXCEEDED when the deadline is (about) reached, CANCELLED otherwise.
   */
  cancelledByPeer(): void {
    if (this.#answered) return;
    const deadlinePassed = this.#deadlineMs - Date.now() <= deadlineToleranceMs;
    this.abort(
      deadlinePassed
        ? new ConnectError("the operation timed out", Code.DeadlineExceeded)
        : new ConnectError("the call was cancelled by the client", Code.Canceled),
    );
  }
}

/**
 * The context values of one call, kept as Connect's `createContextValues` keeps them (as properties
 * named by the keys' symbols, read and written through `this`), with the three methods on the
 * prototype: Connect's object literal makes them anew for every call.
 */
class CallValues implements ContextValues {
  get<T>(key: ContextKey<T>): T {
    const values = this as unknown as Record<symbol, T>;
    return key.id in values ? (values[key.id] as T) : key.defaultValue;
  }

  set<T>(key: ContextKey<T>, value: T): this {
    (this as unknown as Record<symbol, T>)[key.id] = value;
    return this;
  }

  delete(key: ContextKey<unknown>): this {
    delete (this as unknown as Record<symbol, unknown>)[key.id];
    return this;
  }
}

/** A fresh set of context values, for {@link GrpcCallFacts.values}. */
export function newContextValues(): ContextValues {
  return new CallValues();
}
