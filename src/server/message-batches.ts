/** The key of a stream's batch iterator (see {@link BatchedStream}). */
const batchesKey = Symbol("toolruntime.batches");
/** The key of a stream's synchronous start (see {@link startableStream}). */
const startKey = Symbol("toolruntime.start");

/**
 * A stream whose every message was known when it started (RunTool of a run that ended inside
 * start): its one batch, then how it ends. `end` is asked once the batch is sent and gives the
 * error the stream ends with, or undefined; `onEnd`, when set, is told the call's final status code
 * once the stream is over (the call pipeline's observers).
 */
export class SettledStream<T> {
  constructor(
    readonly batch: readonly T[],
    readonly end: () => Error | undefined = () => undefined,
    readonly onEnd?: (code: number) => void,
  ) {}
}

/** A stream as started: settled, or its batches still to come. */
export type StartedStream<T> = SettledStream<T> | { readonly batches: AsyncIterator<readonly T[]> };

/**
 * A server stream whose messages also come in batches: each batch holds the messages that were
 * ready together, in order. Connect iterates it message by message (it is an AsyncIterable); the
 * grpc-js adapter takes the batches (see {@link batchesOf}), so that a run's events recorded in
 * one turn cross the generators between the run and the transport in one step, not one each.
 */
export interface BatchedStream<T> extends AsyncIterable<T> {
  [batchesKey](): AsyncIterator<readonly T[]>;
  /** Its synchronous start, when it has one (see {@link startableStream}). */
  [startKey]?(): StartedStream<T>;
}

// The streams below are classes, with their methods on the prototype: an object literal with
// computed (symbol) keys and a generator method, made per call, cost about a microsecond each.

/** The messages of the batches `batches()` yields, one by one; nothing starts until first stepped. */
async function* messagesOf<T>(batches: () => AsyncIterable<readonly T[]>): AsyncGenerator<T> {
  for await (const batch of batches()) yield* batch;
}

/** The batches of the stream `start()` begins, started when first stepped. */
async function* startedWhenStepped<T>(
  start: () => SettledStream<T> | AsyncIterable<readonly T[]>,
): AsyncGenerator<readonly T[]> {
  yield* batchesOfStarted(start());
}

class Batched<T> implements BatchedStream<T> {
  readonly #batches: () => AsyncIterable<readonly T[]>;

  constructor(batches: () => AsyncIterable<readonly T[]>) {
    this.#batches = batches;
  }

  [batchesKey](): AsyncIterator<readonly T[]> {
    return this.#batches()[Symbol.asyncIterator]();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return messagesOf(this.#batches);
  }
}

class Startable<T> implements BatchedStream<T> {
  readonly #start: () => SettledStream<T> | AsyncIterable<readonly T[]>;

  constructor(start: () => SettledStream<T> | AsyncIterable<readonly T[]>) {
    this.#start = start;
  }

  [batchesKey](): AsyncIterator<readonly T[]> {
    return startedWhenStepped(this.#start);
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return messagesOf(() => startedWhenStepped(this.#start));
  }

  [startKey](): StartedStream<T> {
    let started: SettledStream<T> | AsyncIterable<readonly T[]>;
    try {
      started = this.#start();
    } catch (error) {
      return new SettledStream<T>([], () => asError(error));
    }
    return started instanceof SettledStream ? started : { batches: started[Symbol.asyncIterator]() };
  }
}

class Wrapped<T> implements BatchedStream<T> {
  readonly #stream: () => AsyncIterable<T>;
  readonly #wrap: <U>(source: () => AsyncIterable<U>) => AsyncIterable<U>;
  readonly #start: (() => StartedStream<T>) | undefined;

  constructor(
    stream: () => AsyncIterable<T>,
    wrap: <U>(source: () => AsyncIterable<U>) => AsyncIterable<U>,
    start: (() => StartedStream<T>) | undefined,
  ) {
    this.#stream = stream;
    this.#wrap = wrap;
    this.#start = start;
  }

  [batchesKey](): AsyncIterator<readonly T[]> {
    return this.#wrap(() => iterableOf(batchesOf(this.#stream())))[Symbol.asyncIterator]();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.#wrap(this.#stream)[Symbol.asyncIterator]();
  }

  [startKey](): StartedStream<T> {
    return this.#start ? this.#start() : { batches: this[batchesKey]() };
  }
}

/**
 * A stream over `batches`, a function that starts a new iteration each time it is called (an
 * `async function*`): iterated as messages, each batch is yielded message by message; taken as
 * batches, as is. Empty batches are passed on as they are (the grpc-js adapter writes nothing).
 */
export function batchedStream<T>(batches: () => AsyncIterable<readonly T[]>): BatchedStream<T> {
  return new Batched(batches);
}

/**
 * The batches of `stream`: its own when it is a {@link BatchedStream}, or each of its messages as
 * a batch of one. Returning (or throwing into) the iterator returns the stream's own iterator, so
 * the generators behind it run their `finally` blocks.
 */
export function batchesOf<T>(stream: AsyncIterable<T>): AsyncIterator<readonly T[]> {
  if (batchesKey in stream) return (stream as BatchedStream<T>)[batchesKey]();
  const messages = stream[Symbol.asyncIterator]();
  const asBatch = (next: IteratorResult<T>): IteratorResult<readonly T[]> =>
    next.done ? { done: true, value: undefined } : { done: false, value: [next.value] };
  return {
    next: () => messages.next().then(asBatch),
    return: async () => {
      await messages.return?.();
      return { done: true, value: undefined };
    },
  };
}

/**
 * A stream whose start is synchronous: `start` does the work a call begins with and returns either
 * a {@link SettledStream} or the batches still to come. Iterated, as messages or as batches, it
 * starts when first stepped, as a generator would. The gRPC adapter starts it itself
 * ({@link startOf}) and writes a settled stream and ends the call without a generator or a promise.
 */
export function startableStream<T>(start: () => SettledStream<T> | AsyncIterable<readonly T[]>): BatchedStream<T> {
  return new Startable(start);
}

/** The batches of a stream as started: a settled one's batch and then its end, or the batches to come. */
export async function* batchesOfStarted<T>(
  started: SettledStream<T> | AsyncIterable<readonly T[]>,
): AsyncGenerator<readonly T[]> {
  if (!(started instanceof SettledStream)) {
    yield* started;
    return;
  }
  if (started.batch.length > 0) yield started.batch;
  const error = started.end();
  if (error !== undefined) throw error;
}

/**
 * Starts `stream` now: a {@link startableStream} (or a stream wrapped around one) by its own
 * synchronous start, any other as its batches (see {@link batchesOf}). A start that throws gives a
 * settled stream that ends with the error.
 */
export function startOf<T>(stream: AsyncIterable<T>): StartedStream<T> {
  const batched = stream as Partial<BatchedStream<T>>;
  return batched[startKey] ? batched[startKey]() : { batches: batchesOf(stream) };
}

/**
 * A stream that runs each iteration of `stream()` through `wrap` (an `async function*` that
 * yields what its source yields, with work around it: checks, observation, error mapping), both
 * message by message and batch by batch: the wrapped stream keeps its batches. `start`, when
 * given, is its synchronous start (see {@link startOf}), doing that work around the source's own.
 */
export function wrapStream<T>(
  stream: () => AsyncIterable<T>,
  wrap: <U>(source: () => AsyncIterable<U>) => AsyncIterable<U>,
  start?: () => StartedStream<T>,
): BatchedStream<T> {
  return new Wrapped(stream, wrap, start);
}

/** An iterable over an iterator already started (iterating it again continues it). */
export function iterableOf<T>(iterator: AsyncIterator<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => iterator };
}

/** What was thrown, as an Error (anything else is wrapped, and ends a call as INTERNAL all the same). */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown));
}
