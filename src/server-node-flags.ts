/**
 * The Node.js flags the server is shipped with: `npm start` and the `toolruntime` executable pass
 * them (a unit test holds both to this list), and the bench starts the server with them.
 *
 * `--max-semi-space-size=64` (MB) lets V8's young generation grow to 128 MB instead of Node 20's
 * 32 MB. What a call or a run leaves alive for a while (retained records, runs in flight, calls
 * waiting for their response) is copied by every scavenge it lives through; with room for four
 * times as much between scavenges, fewer scavenges copy it. Measured with both servers loaded at
 * once (`npm run bench:compare`, eight to ten rounds, three times): ExecuteTool 1.06–1.19× the
 * calls/s at 0.88–0.98× the CPU per call; a burst of StartExecution about 1.2× the admissions/s;
 * 128 MB did worse than 64. A bare grpc-js echo gains nothing from it. The price: about 100 MB
 * more RSS under load (given back once idle) and longer scavenge pauses, so a higher p99 latency
 * under a saturating load (see docs/design-notes.md, "The young generation").
 */
export const serverNodeFlags: readonly string[] = ["--max-semi-space-size=64"];
