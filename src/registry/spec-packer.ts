import { inflateRawSync, type ZlibOptions } from "node:zlib";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { fromBinaryFast } from "../codec/fast-binary-decode.js";
import { toBinaryFast } from "../codec/fast-binary.js";
import { deflateOptions, deflateSpec } from "./spec-deflate.js";
import type { PackingJob } from "./spec-packing-worker.js";

/** The most of a registry's own specs' bytes a dictionary holds (deflate reads it whole per spec). */
const maxDictionaryBytes = 8 * 1024;

/**
 * Keeps specs small: a spec is its protobuf encoding, deflated against a dictionary of specs of the
 * same registry, held as a one-byte string (16 bytes of overhead, no ArrayBuffer per spec). The
 * specs of one registry share most of their vocabulary (keywords, types, phrasing of descriptions),
 * so a spec of 1.4 KB packs into a few hundred bytes. Packing costs tens of microseconds, unpacking
 * (inflating and decoding) about as much; the protobuf round trip gives back an equal spec. Packing
 * is usually done on the packing thread (see SpecPackingWorker) from a {@link jobFor}.
 */
export class SpecPacker {
  readonly #dictionary: Buffer;
  readonly #options: ZlibOptions;

  /** @param dictionary bytes whose substrings the packed specs may refer to, kept for unpacking */
  private constructor(dictionary: Buffer) {
    this.#dictionary = dictionary;
    this.#options = deflateOptions(dictionary);
  }

  /** A packer whose dictionary is made of `samples` (the latest first), up to 8 KiB of them. */
  static fromSamples(samples: readonly ToolSpec[]): SpecPacker {
    const parts: Uint8Array[] = [];
    let size = 0;
    for (const spec of samples) {
      const bytes = toBinaryFast(ToolSpecSchema, spec);
      if (size + bytes.byteLength > maxDictionaryBytes) break;
      parts.push(bytes);
      size += bytes.byteLength;
    }
    // zlib matches nearer the end of a dictionary with shorter distances: the latest sample goes last.
    return new SpecPacker(Buffer.concat(parts.reverse()));
  }

  /** The spec packed here, now. */
  pack(spec: ToolSpec): string {
    return deflateSpec(toBinaryFast(ToolSpecSchema, spec), this.#options);
  }

  /** What packing the spec elsewhere needs; its result is what {@link pack} gives. */
  jobFor(spec: ToolSpec): PackingJob {
    return { dictionary: this.#dictionary, bytes: toBinaryFast(ToolSpecSchema, spec) };
  }

  unpack(packed: string): ToolSpec {
    return fromBinaryFast(ToolSpecSchema, inflateRawSync(Buffer.from(packed, "latin1"), this.#options));
  }
}
