import { protoInt64 } from "@bufbuild/protobuf";

/**
 * Reads the protobuf wire format for the compiled decoders (see fast-binary-decode.ts). It is
 * stricter than protobuf-es's BinaryReader on purpose: whatever protobuf-es might read in a way of
 * its own (a value running past the end of its message, a varint longer than ten bytes, a group, a
 * field with a wire type its type does not use) throws {@link NotDecoded}, and the caller hands the
 * bytes to protobuf-es, which then decodes them, or fails, exactly as it always does.
 */
export class WireReader {
  pos = 0;
  /** Message levels entered, counted as protobuf-es counts them against its recursion limit. */
  depth = 0;
  /** The bytes as a Buffer, for its string and number reading methods. */
  readonly buf: Buffer;
  /**
   * Set when a Struct was read from bytes that protobuf-es would not write back as they are (see
   * struct-from-binary.ts: a longer form, an unknown field, a null read where the bytes hold
   * nothing…); the caller clears it.
   */
  lossy = false;

  constructor(
    /** The caller's bytes: bytes fields and unknown fields are views of them, as protobuf-es gives them. */
    readonly input: Uint8Array,
    readonly recursionLimit: number,
    readonly readUnknownFields: boolean,
  ) {
    this.buf = Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  }

  /** Enters a message; beyond the recursion limit protobuf-es must be the one to fail. */
  enter(): void {
    if (++this.depth > this.recursionLimit) throw notDecoded;
  }

  /** A tag as one number (field number × 8 + wire type), checked as protobuf-es checks it. */
  tag(): number {
    const first = this.buf[this.pos];
    // One-byte tags (fields 1–15) are the common case; 0x80 and above continue, and undefined (the end) fails below.
    if (first !== undefined && first < 0x80 && first >= 8 && (first & 7) <= wireBit32) {
      this.pos++;
      return first;
    }
    const start = this.pos;
    const tag = this.uint32();
    const read = this.pos - start;
    if (read > 5 || (read === 5 && (this.buf[this.pos - 1] as number) > 0x0f)) throw notDecoded;
    if (tag >>> 3 === 0 || (tag & 7) > wireBit32) throw notDecoded;
    return tag;
  }

  /** A varint's low 32 bits, unsigned (as protobuf-es's uint32 reads any varint). */
  uint32(): number {
    const buf = this.buf;
    let result = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      const byte = buf[this.pos++];
      if (byte === undefined) throw notDecoded;
      result |= (byte & 0x7f) << shift;
      if (byte < 0x80) return result;
    }
    const fifth = buf[this.pos++];
    if (fifth === undefined) throw notDecoded;
    result |= (fifth & 0x0f) << 28;
    if (fifth >= 0x80) this.skipVarintRest(5);
    return result >>> 0;
  }

  int32(): number {
    return this.uint32() | 0;
  }

  sint32(): number {
    const zigzag = this.uint32();
    return (zigzag >>> 1) ^ -(zigzag & 1);
  }

  /** The rest of a varint whose first `read` bytes were read; ten bytes at most. */
  private skipVarintRest(read: number): void {
    for (; read < 10; read++) {
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw notDecoded;
      if (byte < 0x80) return;
    }
    throw notDecoded;
  }

  /** A 64-bit varint as protobuf-es represents it (its own conversion, so the type is the same). */
  int64(): bigint | string {
    this.varint64();
    return protoInt64.dec(this.lo, this.hi);
  }

  uint64(): bigint | string {
    this.varint64();
    return protoInt64.uDec(this.lo, this.hi);
  }

  sint64(): bigint | string {
    this.varint64();
    const sign = -(this.lo & 1);
    const lo = ((this.lo >>> 1) | ((this.hi & 1) << 31)) ^ sign;
    const hi = (this.hi >>> 1) ^ sign;
    return protoInt64.dec(lo, hi);
  }

  fixed64(): bigint | string {
    return protoInt64.uDec(this.sfixed32(), this.sfixed32());
  }

  sfixed64(): bigint | string {
    return protoInt64.dec(this.sfixed32(), this.sfixed32());
  }

  private lo = 0;
  private hi = 0;

  /** Reads a varint into lo and hi, the two 32-bit halves protobuf-es's varint64read gives. */
  private varint64(): void {
    const buf = this.buf;
    let lo = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      const byte = buf[this.pos++];
      if (byte === undefined) throw notDecoded;
      lo |= (byte & 0x7f) << shift;
      if (byte < 0x80) {
        this.lo = lo;
        this.hi = 0;
        return;
      }
    }
    const middle = buf[this.pos++];
    if (middle === undefined) throw notDecoded;
    lo |= (middle & 0x0f) << 28;
    let hi = (middle & 0x70) >> 4;
    if (middle >= 0x80) {
      for (let shift = 3; ; shift += 7) {
        if (shift > 31) throw notDecoded;
        const byte = buf[this.pos++];
        if (byte === undefined) throw notDecoded;
        hi |= (byte & 0x7f) << shift;
        if (byte < 0x80) break;
      }
    }
    this.lo = lo;
    this.hi = hi;
  }

  bool(): boolean {
    const byte = this.buf[this.pos];
    if (byte !== undefined && byte < 0x80) {
      this.pos++;
      return byte !== 0;
    }
    this.varint64();
    return this.lo !== 0 || this.hi !== 0;
  }

  fixed32(): number {
    this.need(4);
    const value = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return value;
  }

  sfixed32(): number {
    this.need(4);
    const value = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return value;
  }

  float(): number {
    this.need(4);
    const value = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return value;
  }

  double(): number {
    this.need(8);
    const value = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return value;
  }

  /** The length of a length-delimited value, checked against the bytes left; returns where it ends. */
  delimited(): number {
    const length = this.uint32();
    this.need(length);
    return this.pos + length;
  }

  /** A bytes value: a view of the caller's bytes, as protobuf-es gives it. */
  bytes(): Uint8Array {
    const end = this.delimited();
    const value = this.input.subarray(this.pos, end);
    this.pos = end;
    return value;
  }

  /** A string; `strict` refuses invalid UTF-8 (proto3 strings), as protobuf-es does. */
  string(strict: boolean): string {
    const end = this.delimited();
    const start = this.pos;
    this.pos = end;
    const buf = this.buf;
    if (end - start <= shortAscii) {
      // Most keys and many values are a few ASCII characters: joined here they cost a third of a
      // call into Node (about 20 against 55 ns), and strings this short are flat, not ropes.
      let text = "";
      for (let i = start; i < end; i++) {
        const code = buf[i] as number;
        if (code >= 0x80) return (strict ? strictUtf8 : lenientUtf8).decode(buf.subarray(start, end));
        text += String.fromCharCode(code);
      }
      return text;
    }
    for (let i = start; i < end; i++) {
      if ((buf[i] as number) >= 0x80) return (strict ? strictUtf8 : lenientUtf8).decode(buf.subarray(start, end));
    }
    // ASCII: as Latin-1 it is a flat one-byte string, made without a decoder's overhead.
    // latin1Slice is what toString("latin1") calls after checking its arguments, which cost a third as much again.
    return (buf as unknown as LatinSlicing).latin1Slice(start, end);
  }

  /** The bytes from `start` to `end` as a Latin-1 string, one character per byte (a copy of them). */
  latin1(start: number, end: number): string {
    return (this.buf as unknown as LatinSlicing).latin1Slice(start, end);
  }

  /** Skips an unknown field's value; groups are left to protobuf-es. Returns where the value started. */
  skip(wireType: number): number {
    const start = this.pos;
    switch (wireType) {
      case wireVarint:
        this.skipVarintRest(0);
        break;
      case wireBit64:
        this.need(8);
        this.pos += 8;
        break;
      case wireBit32:
        this.need(4);
        this.pos += 4;
        break;
      case wireDelimited:
        this.pos = this.delimited();
        break;
      default:
        throw notDecoded;
    }
    return start;
  }

  /** Checks that a message (or packed run, or map entry) ended exactly where its length said. */
  endAt(end: number): void {
    if (this.pos !== end) throw notDecoded;
  }

  private need(bytes: number): void {
    if (this.pos + bytes > this.buf.length) throw notDecoded;
  }
}

/** Wire types as plain numbers (protobuf-es's WireType enum, without enum comparisons). */
export const wireVarint = 0;
export const wireBit64 = 1;
export const wireDelimited = 2;
export const wireBit32 = 5;

/** Longest string decoded by joining its characters rather than by latin1Slice (measured crossover: 7). */
const shortAscii = 6;

/** Node's Buffer method behind toString("latin1", start, end), left out of its type declarations. */
interface LatinSlicing {
  latin1Slice(start: number, end: number): string;
}

/** Thrown where protobuf-es must decode instead: it is never seen outside the decoder. */
export class NotDecoded extends Error {}

/** One instance: its stack trace is never read, and building one per fallback costs. */
export const notDecoded = new NotDecoded("left to protobuf-es");

/** As protobuf-es decodes: a leading U+FEFF is text, not a byte-order mark. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const lenientUtf8 = new TextDecoder("utf-8", { ignoreBOM: true });
