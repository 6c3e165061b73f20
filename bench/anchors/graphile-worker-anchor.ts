// graphile-worker 0.18 anchor for the durable ExecuteTool: `addJob` of a no-op job, a task runs
// it, the producer learns it ran. Run by run-anchor.ts under Node 22 (graphile-worker 0.18 needs
// ≥ 22.18):
//   node dist/bench/anchors/graphile-worker-anchor.js <connection string> <in flight> <measure s>
// in a fresh database of its own (graphile-worker installs its schema there). Prints `measuring`
// and `window closed` at the measure window's edges, then one JSON line (closed-loop.ts's
// AnchorResult).
//
// Completion is learnt the favourable way: the task resolves the producer's promise for the job in
// the same process (producer and worker pool share one process and one pool). graphile-worker then
// records the completion without the task waiting for it, so the completion's write is in the
// commits, WAL and CPU per job but not in the latency.
//
// Configured for throughput as graphile-worker's performance page recommends: as many concurrent
// jobs as are in flight, a pool of at least concurrency + 2, a local queue fetching jobs in batches
// (concurrency + 1), completions batched (`completeJobBatchDelay` 0: those finished in the same
// tick go in one statement). LISTEN/NOTIFY wakes the workers on each new job (graphile-worker
// always listens); polling, the backstop, every 100 ms. Without the local queue it did about 800
// jobs/s at 64 in flight here against 1,230 with it, 750 against 990 at 8; without batched
// completions 1,090 at 64; with 16 concurrent jobs rather than 64, or polling every 2 s, the same.
import { Logger, run } from "graphile-worker";
import { Completions, parseAnchorArgs, runClosedLoop } from "./closed-loop.js";

const args = parseAnchorArgs();
const completions = new Completions();
const silent = new Logger(() => () => {});

const runner = await run({
  connectionString: args.connectionString,
  concurrency: args.inFlight,
  maxPoolSize: Math.max(10, args.inFlight + 2),
  pollInterval: 100,
  noHandleSignals: true,
  logger: silent,
  taskList: {
    noop: (payload) => {
      completions.done((payload as { job: number }).job);
    },
  },
  preset: {
    worker: { localQueue: { size: args.inFlight + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
  },
});
await runClosedLoop("graphile-worker", args, (job) => runner.addJob("noop", { job }), completions);
await runner.stop();
