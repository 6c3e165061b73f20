import { expect } from "chai";
import {
  batchedStream,
  batchesOf,
  SettledStream,
  startableStream,
  startOf,
  wrapStream,
} from "../../src/server/message-batches.js";

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

async function collectBatches<T>(iterator: AsyncIterator<readonly T[]>): Promise<(readonly T[])[]> {
  const batches: (readonly T[])[] = [];
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) batches.push(next.value);
  return batches;
}

describe("message batches", () => {
  describe("batchedStream()", () => {
    it("yields its batches message by message to a plain iteration, and as they are to batchesOf()", async () => {
      const stream = batchedStream(async function* () {
        await Promise.resolve();
        yield [1, 2, 3];
        yield [];
        yield [4];
      });
      expect(await collect(stream)).to.deep.equal([1, 2, 3, 4]);
      expect(await collectBatches(batchesOf(stream))).to.deep.equal([[1, 2, 3], [], [4]]);
    });
  });

  describe("startableStream() and startOf()", () => {
    it("starts at the first step when iterated, and at once (settled) through startOf()", async () => {
      let starts = 0;
      let ends = 0;
      const stream = startableStream(() => {
        starts += 1;
        return new SettledStream([1, 2, 3], () => {
          ends += 1;
          return undefined;
        });
      });
      const iterator = stream[Symbol.asyncIterator]();
      expect(starts, "before the first step").to.equal(0);
      expect((await iterator.next()).value).to.equal(1);
      expect(starts).to.equal(1);
      expect(await collect({ [Symbol.asyncIterator]: () => iterator })).to.deep.equal([2, 3]);
      expect(ends, "asked once, after the batch").to.equal(1);

      const started = startOf(stream);
      expect(starts).to.equal(2);
      expect(started).to.be.instanceOf(SettledStream);
      expect((started as SettledStream<number>).batch).to.deep.equal([1, 2, 3]);
    });

    it("ends an iteration with a settled stream's error after its batch, and settles a start that throws", async () => {
      const failing = startableStream(() => new SettledStream(["a"], () => new Error("deadline")));
      const seen: string[] = [];
      let error: unknown;
      try {
        for await (const message of failing) seen.push(message);
      } catch (thrown) {
        error = thrown;
      }
      expect(seen).to.deep.equal(["a"]);
      expect((error as Error).message).to.equal("deadline");

      const refused = startableStream<string>(() => {
        throw new Error("not allowed");
      });
      const started = startOf(refused) as SettledStream<string>;
      expect(started.batch).to.deep.equal([]);
      expect(started.end()?.message).to.equal("not allowed");
    });

    it("gives the batches still to come of a start that is not settled, and of a plain batched stream", async () => {
      const watched = startableStream(() =>
        (async function* () {
          await Promise.resolve();
          yield [1];
          yield [2, 3];
        })(),
      );
      const started = startOf(watched);
      expect(started).not.to.be.instanceOf(SettledStream);
      expect(await collectBatches((started as { batches: AsyncIterator<readonly number[]> }).batches)).to.deep.equal([
        [1],
        [2, 3],
      ]);
      const plain = startOf(
        batchedStream(async function* () {
          await Promise.resolve();
          yield ["x", "y"];
        }),
      );
      expect(await collectBatches((plain as { batches: AsyncIterator<readonly string[]> }).batches)).to.deep.equal([
        ["x", "y"],
      ]);
    });
  });

  describe("batchesOf()", () => {
    it("makes each message of a plain stream a batch of one", async () => {
      const plain = (async function* () {
        await Promise.resolve();
        yield "a";
        yield "b";
      })();
      expect(await collectBatches(batchesOf(plain))).to.deep.equal([["a"], ["b"]]);
    });

    it("runs the stream's finally blocks when the iterator is returned early", async () => {
      let cleaned = false;
      const plain = (async function* () {
        await Promise.resolve();
        try {
          yield "a";
          yield "b";
        } finally {
          cleaned = true;
        }
      })();
      const iterator = batchesOf(plain);
      expect((await iterator.next()).value).to.deep.equal(["a"]);
      await iterator.return?.();
      expect(cleaned).to.equal(true);
    });
  });

  describe("wrapStream()", () => {
    it("runs the wrapper around both iterations, keeping the batches and the errors", async () => {
      const log: string[] = [];
      const stream = () =>
        wrapStream(
          () =>
            batchedStream(async function* () {
              await Promise.resolve();
              yield ["x", "y"];
              yield ["z"];
              throw new Error("source failed");
            }),
          async function* <U>(source: () => AsyncIterable<U>) {
            log.push("start");
            try {
              yield* source();
            } catch (error) {
              log.push(`caught ${(error as Error).message}`);
              throw new Error("mapped", { cause: error });
            } finally {
              log.push("end");
            }
          },
        );

      const messages: string[] = [];
      let failure: unknown;
      try {
        for await (const message of stream()) messages.push(message);
      } catch (error) {
        failure = error;
      }
      expect(messages).to.deep.equal(["x", "y", "z"]);
      expect((failure as Error).message).to.equal("mapped");

      const iterator = batchesOf(stream());
      expect((await iterator.next()).value).to.deep.equal(["x", "y"]);
      expect((await iterator.next()).value).to.deep.equal(["z"]);
      let batchFailure: unknown;
      await iterator.next().catch((error: unknown) => (batchFailure = error));
      expect((batchFailure as Error).message).to.equal("mapped");
      expect(log).to.deep.equal(["start", "caught source failed", "end", "start", "caught source failed", "end"]);
    });

    it("calls the source only once the wrapper asks for it (after its checks)", async () => {
      let sourceCalls = 0;
      const wrapped = wrapStream(
        () => {
          sourceCalls += 1;
          return batchedStream(async function* () {
            await Promise.resolve();
            yield [1];
          });
        },
        async function* <U>(source: () => AsyncIterable<U>) {
          if (sourceCalls === 0) throw new Error("refused before the source");
          yield* source();
        },
      );
      let failure: unknown;
      await batchesOf(wrapped)
        .next()
        .catch((error: unknown) => (failure = error));
      expect((failure as Error).message).to.equal("refused before the source");
      expect(sourceCalls).to.equal(0);
    });
  });
});
