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
 * `--expose-gc` lets the server start V8's full collection itself in the lull after a burst of
 * runs (unless `--no-lull-collection`; see async/lull-collection.ts) instead of V8 starting it in
 * the middle of the next burst. It exposes `gc` to every module of the process,
 * tool modules included (which run in the process anyway).
 */
export const serverNodeFlags: readonly string[] = ["--max-semi-space-size=32", "--expose-gc"];
