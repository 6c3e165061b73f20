import { toBinary, toJsonString, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/**
 * Bytes of a page's message kept for everything but its items (page token, version, framing, the
 * JSON punctuation between items).
 */
const pageReserveBytes = 16 * 1024;

/** Sizes of messages already measured; specs are shared, immutable objects. */
const measured = new WeakMap<object, number>();

/** The budget for the items of one page under a message limit of `maxMessageBytes`, in bytes. */
export function pageBudgetBytes(maxMessageBytes: number): number {
  return Math.max(1, maxMessageBytes - pageReserveBytes);
}

/**
 * The size of one item of a page: the larger of its binary and JSON encodings (a page is sent in
 * either), plus the field's tag and length prefix. Cached per message object when `cache` is set.
 */
export function encodedItemBytes<S extends DescMessage>(schema: S, message: MessageShape<S>, cache = false): number {
  const known = cache ? measured.get(message) : undefined;
  if (known !== undefined) return known;
  const binary = toBinary(schema, message).byteLength;
  const json = Buffer.byteLength(toJsonString(schema, message));
  const size = Math.max(binary, json) + 6;
  if (cache) measured.set(message, size);
  return size;
}

/**
 * The longest prefix of `items` whose sizes add up to at most `budgetBytes`, and whether items
 * were cut. It keeps at least one item, so a listing always makes progress.
 */
export function fitPage<T>(
  items: readonly T[],
  sizeOf: (item: T) => number,
  budgetBytes: number,
): { items: T[]; cut: boolean } {
  let used = 0;
  for (let index = 0; index < items.length; index++) {
    used += sizeOf(items[index] as T);
    if (used > budgetBytes && index > 0) return { items: items.slice(0, index), cut: true };
  }
  return { items: [...items], cut: false };
}
