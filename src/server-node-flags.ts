/**
 * The Node.js flags the server is shipped with: `npm start` and the `toolruntime` executable pass
 * them (a unit test holds both to this list), and the bench starts the server with them.
 *
 * `--max-semi-space-size=32` (MB) lets V8's young generation grow to 64 MB instead of Node 20's
 * 32 MB. A burst of runs keeps thousands of them alive at once, and every scavenge they live
 * through copies them: with twice the room, fewer scavenges do. Measured on fresh servers, alternated
 * (first 10,000-run StartExecution burst): 1.03-1.31x the admissions/s of 64 MB in three sets of four
 * to eight pairs, and 64 MB did 1.10x Node's default; the first 10,000 registrations 0.95x and 1.08x
 * against 64 MB. Under a steady ExecuteTool load it no longer matters much: 64 MB had paid off
 * (1.06-1.19x the calls/s) while every call was promoted through a chain of Map tables (see
 * collections/churn-map.ts); since then 32 MB does 1.02x the calls/s of 64 MB at 0.98x the CPU per
 * call and 0.86x the p99, and Node's default as much as 32. The price: up to about 50 MB more RSS
 * under load (given back once idle) and slightly longer scavenge pauses than the default (see
 * docs/design-notes.md, "The young generation").
 *
 * `--min-semi-space-size=16` (MB) keeps the young generation from shrinking below 32 MB while the
 * server idles. V8's memory reducer otherwise shrinks it to 1-2 MB after some seconds without load,
 * and when load comes back, the young generation collected every few dozen calls while it grows
 * again finds nearly every object of the calls in flight alive: V8 then decides that their
 * allocation sites make long-lived objects and allocates them in the old generation from then on
 * (allocation-site pretenuring, a decision it keeps). A server in that state wrote 6.2-7.1 KB per
 * ExecuteTool call to the old generation instead of 1.3, ran a full collection every second instead
 * of every five, and did 0.65-0.8x the calls/s at 1.3-1.6x the CPU per call until it restarted:
 * three fresh servers of six that had idled 25 s after their first call, and the bench's rounds
 * that were slow in every slice (see docs/design-notes.md, "A server that idled"). With the floor,
 * none of six did.
 * The price: up to about 30 MB more resident while idle.
 *
 * `--expose-gc` lets the server start V8's full collection itself in the lull after a burst of
 * runs (unless `--no-lull-collection`; see async/lull-collection.ts) instead of V8 starting it in
 * the middle of the next burst. It exposes `gc` to every module of the process,
 * tool modules included (which run in the process anyway).
 */
export const serverNodeFlags: readonly string[] = [
  "--max-semi-space-size=32",
  "--min-semi-space-size=16",
  "--expose-gc",
];
