/** The key of a stream's batch iterator (see {@link BatchedStream}). */
const batchesKey = Symbol("toolruntime.batches");

/**
 * A server stream whose messages also come in batches: each batch holds the messages that were
 * ready together, in order. Connect iterates it message by message (it is an AsyncIterable); the
 * grpc-js adapter takes the batches (see {@link batchesOf}), so that a run's events recorded in
 * one turn cross the generators between the run and the transport in one step, not one each.
 */
export interface BatchedStream<T> extends AsyncIterable<T> {
  readonly [batchesKey]: () => AsyncIterator<readonly T[]>;
}

/**
 * A stream over `batches`, a function that starts a new iteration each time it is called (an
 * `async function*`): iterated as messages, each batch is yielded message by message; taken as
 * batches, as is. Empty batches are passed on as they are (the grpc-js adapter writes nothing).
 */
export function batchedStream<T>(batches: () => AsyncIterable<readonly T[]>): BatchedStream<T> {
  return {
    [batchesKey]: () => batches()[Symbol.asyncIterator](),
    async *[Symbol.asyncIterator]() {
      for await (const batch of batches()) yield* batch;
    },
  };
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
 * A stream that runs each iteration of `stream()` through `wrap` (an `async function*` that
 * yields what its source yields, with work around it: checks, observation, error mapping), both
 * message by message and batch by batch: the wrapped stream keeps its batches.
 */
export function wrapStream<T>(
  stream: () => AsyncIterable<T>,
  wrap: <U>(source: () => AsyncIterable<U>) => AsyncIterable<U>,
): BatchedStream<T> {
  return {
    [batchesKey]: () => wrap(() => iterableOf(batchesOf(stream())))[Symbol.asyncIterator](),
    [Symbol.asyncIterator]: () => wrap(stream)[Symbol.asyncIterator](),
  };
}

function iterableOf<T>(iterator: AsyncIterator<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => iterator };
}
