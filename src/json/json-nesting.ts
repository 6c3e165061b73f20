/**
 * Deepest nesting of arrays and objects a request's JSON may have before it is parsed. Parsing
 * 1,000,000 nested brackets (2 MB) held the event loop about a second; protobuf-es refuses
 * values nested deeper than this when it reads them anyway, and a tool's inputs may nest 64.
 */
export const maxJsonNesting = 1000;

const quote = 0x22;
const backslash = 0x5c;
const openBracket = 0x5b;
const closeBracket = 0x5d;
const openBrace = 0x7b;
const closeBrace = 0x7d;

/**
 * Whether the JSON text in `chunks` (UTF-8) nests arrays and objects deeper than `maxDepth`, told
 * by one pass over its bytes without parsing it (brackets inside strings do not count; bytes of
 * multi-byte characters never equal the ASCII ones looked for). Text that is not valid JSON is
 * left to the parser to refuse.
 */
export function nestsDeeperThan(chunks: readonly Uint8Array[], maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (const chunk of chunks) {
    for (let index = 0; index < chunk.length; index++) {
      const byte = chunk[index] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === backslash) escaped = true;
        else if (byte === quote) inString = false;
      } else if (byte === quote) inString = true;
      else if (byte === openBracket || byte === openBrace) {
        if (++depth > maxDepth) return true;
      } else if (byte === closeBracket || byte === closeBrace) depth--;
    }
  }
  return false;
}

/** The message of a refusal for JSON nested deeper than `maxDepth`. */
export function tooDeepMessage(maxDepth: number): string {
  return `the request's JSON nests arrays and objects deeper than ${maxDepth.toLocaleString("en-US")} levels: send a flatter message`;
}
