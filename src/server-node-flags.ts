/**
 * The Node.js flags the server is shipped with: `npm start` and the `toolruntime` executable pass
 * them (a unit test holds both to this list), and the bench starts the server with them.
 *
 * `--max-semi-space-size=64` (MB) lets V8's young generation grow to 128 MB instead of Node 20's
 * 32 MB. What a call or a run leaves alive for a while (retained records, runs in flight, calls
 * waiting for their response) is copied by every scavenge it lives through; with room for four
 * times as much between scavenges, less of it is copied again and promoted. Measured with both
 * servers loaded at once (`npm run bench:compare`, eight rounds): ExecuteTool 1.19× the calls/s at
 * 0.88× the server CPU per call against the default; 32 MB gave 1.09×, 128 MB less than 64. A bare
 * grpc-js echo gains nothing from it. The price is memory under load (about 100 MB more RSS during
 * a sustained load in that measurement), which V8 gives back once the server is idle.
 */
export const serverNodeFlags: readonly string[] = ["--max-semi-space-size=64"];
