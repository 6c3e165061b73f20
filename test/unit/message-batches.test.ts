import { expect } from "chai";
import { batchedStream, batchesOf, wrapStream } from "../../src/server/message-batches.js";

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
