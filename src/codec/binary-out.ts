/**
 * The protobuf wire format written into one buffer whose size is known in advance. Encoders run
 * two passes: the first measures (and records, in visiting order, the sizes the second will need:
 * lengths of nested messages and of strings), the second writes. protobuf-es's BinaryWriter forks
 * and joins a chunk list for every nested message instead, which costs more than the rest of the
 * encoding for the small messages a call answers with.
 */

/** Strings up to this length are measured and copied in JavaScript: a call into Buffer costs more. */
const shortString = 64;

const float64 = new Float64Array(1);
const float64Bytes = new Uint8Array(float64.buffer);
const float32 = new Float32Array(1);
const float32Bytes = new Uint8Array(float32.buffer);
const maxSafeBigInt = BigInt(Number.MAX_SAFE_INTEGER);

/** UTF-8 length of `text`. */
export function utf8Length(text: string): number {
  if (text.length > shortString) return Buffer.byteLength(text);
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 0x80) return Buffer.byteLength(text);
  }
  return text.length;
}

/** Bytes of a varint holding a non-negative integer up to 2^53. */
export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  let size = 5;
  for (let rest = Math.floor(value / 0x800000000); rest > 0; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/** Bytes of an int32 varint: a negative value takes ten (it is sign-extended to 64 bits). */
export function int32Size(value: number): number {
  return value < 0 ? 10 : varintSize(value);
}

/** A 64-bit field's value as protobuf-es holds it (bigint, or a string with jstype JS_STRING). */
export type Int64Value = bigint | string | number;

/** The value as the unsigned 64-bit integer the wire holds: a number when it is safe, else a bigint. */
export function wireInt64(value: Int64Value): number | bigint {
  if (typeof value === "number") return value >= 0 ? value : BigInt.asUintN(64, BigInt(value));
  const big = typeof value === "bigint" ? value : BigInt(value);
  if (big >= 0n && big <= maxSafeBigInt) return Number(big);
  return BigInt.asUintN(64, big);
}

/** Bytes of a varint holding what {@link wireInt64} returned. */
export function int64Size(value: number | bigint): number {
  if (typeof value === "number") return varintSize(value);
  let size = 1;
  for (let rest = value >> 7n; rest > 0n; rest >>= 7n) size++;
  return size;
}

/** Bytes of a length-delimited field whose tag takes `tagSize` bytes and whose content takes `size`. */
export function delimitedSize(tagSize: number, size: number): number {
  return tagSize + varintSize(size) + size;
}

/** The tag of a field as varint bytes. */
export function tagBytes(fieldNumber: number, wireType: number): readonly number[] {
  const bytes: number[] = [];
  let value = ((fieldNumber << 3) | wireType) >>> 0;
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value);
  return bytes;
}

/** Writes into a buffer sized by the first pass, reading the sizes it recorded in order. */
export class BinaryOut {
  pos = 0;
  #next = 0;

  constructor(
    readonly buffer: Buffer,
    private readonly sizes: readonly number[],
  ) {}

  /** The next size the first pass recorded. */
  nextSize(): number {
    return this.sizes[this.#next++] as number;
  }

  byte(value: number): void {
    this.buffer[this.pos++] = value;
  }

  tag(bytes: readonly number[]): void {
    for (let i = 0; i < bytes.length; i++) this.buffer[this.pos++] = bytes[i] as number;
  }

  /** A non-negative integer up to 2^53. */
  varint(value: number): void {
    while (value > 0x7f) {
      // The low seven bits survive the 32-bit conversion of `&` for any integer.
      this.buffer[this.pos++] = (value & 0x7f) | 0x80;
      value = value > 0xffffffff ? Math.floor(value / 0x80) : value >>> 7;
    }
    this.buffer[this.pos++] = value;
  }

  int32(value: number): void {
    if (value >= 0) this.varint(value);
    else this.int64(BigInt.asUintN(64, BigInt(value)));
  }

  /** What {@link wireInt64} returned. */
  int64(value: number | bigint): void {
    if (typeof value === "number") return this.varint(value);
    while (value > 0x7fn) {
      this.buffer[this.pos++] = Number(value & 0x7fn) | 0x80;
      value >>= 7n;
    }
    this.buffer[this.pos++] = Number(value);
  }

  double(value: number): void {
    float64[0] = value;
    for (let i = 0; i < 8; i++) this.buffer[this.pos++] = float64Bytes[i] as number;
  }

  float(value: number): void {
    float32[0] = value;
    for (let i = 0; i < 4; i++) this.buffer[this.pos++] = float32Bytes[i] as number;
  }

  fixed32(value: number): void {
    this.buffer.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  sfixed32(value: number): void {
    this.buffer.writeInt32LE(value | 0, this.pos);
    this.pos += 4;
  }

  /** A string whose UTF-8 length is `length`, prefixed by it. */
  string(text: string, length: number): void {
    this.varint(length);
    if (length === text.length && length <= shortString) {
      // ASCII: one byte per character.
      for (let i = 0; i < length; i++) this.buffer[this.pos++] = text.charCodeAt(i);
    } else {
      this.pos += this.buffer.write(text, this.pos, length, "utf8");
    }
  }

  /** Raw bytes, prefixed by their length. */
  bytes(data: Uint8Array): void {
    this.varint(data.byteLength);
    this.raw(data);
  }

  raw(data: Uint8Array): void {
    this.buffer.set(data, this.pos);
    this.pos += data.byteLength;
  }
}
