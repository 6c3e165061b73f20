/**
 * The protobuf wire format written in one pass into a reused scratch buffer, then copied out at
 * its exact size. A length-delimited value (a nested message, a packed list) reserves one byte for
 * its length, which almost always suffices; a longer content is moved up by the extra bytes its
 * length takes (a memmove). Measuring everything first (a second walk of the message, and a list
 * of the sizes found) cost more than the writing itself; protobuf-es's BinaryWriter forks and joins
 * a chunk list for every nested message instead.
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

/** Scratch space kept between encodings; one that grew past this is dropped after use. */
const scratchBytes = 64 * 1024;
let sharedScratch: Buffer | undefined = Buffer.allocUnsafe(scratchBytes);

/**
 * Writes a message's bytes into scratch space (see the top of this file). Not reentrant by
 * design: an encoding takes the shared scratch buffer and gives it back in {@link finish}; one that
 * starts meanwhile (none does: nothing it calls runs other code) gets a buffer of its own.
 */
export class BinaryOut {
  pos = 0;
  buffer: Buffer;

  constructor() {
    this.buffer = sharedScratch ?? Buffer.allocUnsafe(scratchBytes);
    sharedScratch = undefined;
  }

  /** The bytes written, in a buffer of their own; the scratch space goes back for the next encoding. */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buffer.copy(out, 0, 0, this.pos);
    if (this.buffer.length <= scratchBytes) sharedScratch = this.buffer;
    return out;
  }

  /** Makes room for `bytes` more bytes. */
  ensure(bytes: number): void {
    if (this.pos + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.pos + bytes));
    this.buffer.copy(grown, 0, 0, this.pos);
    this.buffer = grown;
  }

  /** Reserves the length byte of a length-delimited value; returns where {@link endDelimited} finds it. */
  beginDelimited(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Writes the length of the value begun at `at`, moving its content up when the length takes more than a byte. */
  endDelimited(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buffer[at] = length;
      return;
    }
    const extra = varintSize(length) - 1;
    this.ensure(extra);
    this.buffer.copyWithin(at + 1 + extra, at + 1, this.pos);
    this.pos += extra;
    let value = length;
    let to = at;
    while (value > 0x7f) {
      this.buffer[to++] = (value & 0x7f) | 0x80;
      value = value > 0xffffffff ? Math.floor(value / 0x80) : value >>> 7;
    }
    this.buffer[to] = value;
  }

  byte(value: number): void {
    this.ensure(1);
    this.buffer[this.pos++] = value;
  }

  tag(bytes: readonly number[]): void {
    this.ensure(bytes.length);
    for (let i = 0; i < bytes.length; i++) this.buffer[this.pos++] = bytes[i] as number;
  }

  /** A non-negative integer up to 2^53. */
  varint(value: number): void {
    this.ensure(10);
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
    this.ensure(10);
    while (value > 0x7fn) {
      this.buffer[this.pos++] = Number(value & 0x7fn) | 0x80;
      value >>= 7n;
    }
    this.buffer[this.pos++] = Number(value);
  }

  double(value: number): void {
    this.ensure(8);
    float64[0] = value;
    for (let i = 0; i < 8; i++) this.buffer[this.pos++] = float64Bytes[i] as number;
  }

  float(value: number): void {
    this.ensure(4);
    float32[0] = value;
    for (let i = 0; i < 4; i++) this.buffer[this.pos++] = float32Bytes[i] as number;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.buffer.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  sfixed32(value: number): void {
    this.ensure(4);
    this.buffer.writeInt32LE(value | 0, this.pos);
    this.pos += 4;
  }

  /** A string, prefixed by its UTF-8 length. */
  string(text: string): void {
    const length = text.length;
    if (length <= shortString) {
      // Most strings are short ASCII: one byte per character, and a length that takes one byte.
      this.ensure(length + 1);
      const at = this.pos;
      const buffer = this.buffer;
      let pos = at + 1;
      let i = 0;
      for (; i < length; i++) {
        const code = text.charCodeAt(i);
        if (code >= 0x80) break;
        buffer[pos++] = code;
      }
      if (i === length) {
        buffer[at] = length;
        this.pos = pos;
        return;
      }
    }
    const bytes = Buffer.byteLength(text);
    this.varint(bytes);
    this.ensure(bytes);
    this.pos += this.buffer.write(text, this.pos, bytes, "utf8");
  }

  /** Raw bytes, prefixed by their length. */
  bytes(data: Uint8Array): void {
    this.varint(data.byteLength);
    this.raw(data);
  }

  /** Bytes held as a Latin-1 string, one byte per character, without a length. */
  latin1(bytes: string): void {
    this.ensure(bytes.length);
    this.pos += this.buffer.write(bytes, this.pos, bytes.length, "latin1");
  }

  raw(data: Uint8Array): void {
    this.ensure(data.byteLength);
    this.buffer.set(data, this.pos);
    this.pos += data.byteLength;
  }
}
