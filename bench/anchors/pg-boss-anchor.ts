// pg-boss 12 anchor for the durable ExecuteTool: `send` of a no-op job, `work` runs it, the producer
// learns it ran. Run by run-anchor.ts under Node 22 (pg-boss 12 needs ≥ 22.12):
//   node dist/bench/anchors/pg-boss-anchor.js <connection string> <in flight> <measure s>
// in a fresh database of its own (pg-boss installs its schema there). Prints `measuring` and `window
// closed` at the measure window's edges, then one JSON line (closed-loop.ts's AnchorResult).
//
// Completion is learnt as graphile-worker-anchor.ts learns it, the favourable way: the handler
// resolves the producer's promise for the job in the same process, and pg-boss's worker then
// records the completion (its `complete` is in the commits, WAL and CPU per job, not in the
// latency). pg-boss 12 has no completion callback to the sender, and polling the job's state from
// the producer would add queries of its own.
//
// Configured for throughput as pg-boss documents it: LISTEN/NOTIFY on (`useListenNotify`, queue
// `notify`) so the worker fetches as soon as a job is committed, polling at its 0.5 s minimum as
// the backstop, and jobs fetched and completed in batches of up to all those in flight
// (`batchSize`). One worker (`localConcurrency` 1) did best here: at 64 in flight, 1 worker
// fetching up to 64 did about 1,140 jobs/s, 2 × 32 and 4 × 16 about 1,000, 8 × 8 890, and 64 × 1
// 440 (every NOTIFY wakes every worker); at 8 in flight, 1 × 8 930, 2 × 4 680, 8 × 1 410.
// Cron scheduling and the supervisor (maintenance) are off: nothing else runs during the window.
import { PgBoss } from "pg-boss";
import { Completions, parseAnchorArgs, runClosedLoop } from "./closed-loop.js";

const args = parseAnchorArgs();
const queue = "noop";

const boss = new PgBoss({
  connectionString: args.connectionString,
  // A connection for each `send` in flight, the worker's fetch or completion, and the listener.
  max: Math.max(10, args.inFlight + 3),
  useListenNotify: true,
  schedule: false,
  supervise: false,
});
boss.on("error", (error) => {
  process.stderr.write(`pg-boss: ${String(error)}\n`);
  process.exitCode = 1;
});
await boss.start();
await boss.createQueue(queue, { notify: true });
const completions = new Completions();
await boss.work<{ job: number }>(
  queue,
  {
    batchSize: args.inFlight,
    localConcurrency: 1,
    pollingIntervalSeconds: 0.5,
    notifyPollingIntervalSeconds: 0.5,
  },
  (jobs) => {
    for (const job of jobs) completions.done(job.data.job);
    return Promise.resolve();
  },
);
await runClosedLoop(
  "pg-boss",
  args,
  async (job) => {
    if ((await boss.send(queue, { job })) === null) throw new Error(`pg-boss did not create job ${job}`);
  },
  completions,
);
await boss.stop({ graceful: true, timeout: 10_000 });
