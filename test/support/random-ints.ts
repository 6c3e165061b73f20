/** A repeatable sequence of pseudo-random integers below `bound` (xorshift32), for randomised tests. */
export function randomInts(seed: number): (bound: number) => number {
  let state = seed >>> 0 || 1;
  return (bound) => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state % bound;
  };
}
