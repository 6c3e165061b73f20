// `npm run bench:overload`: three replicas on one private PostgreSQL, past their capacity.
// 1. Capacity: a closed loop (each caller sends its next ExecuteTool of builtin.noop as soon as the
//    last one answered) with 8, 16 and 32 callers spread over the replicas; the best OK rate is the
//    capacity measured in this run.
// 2. Overload: calls sent at twice that rate (paced arrivals, each caller a closed loop of its own
//    calls, as many callers as it takes), every call with a 2 s deadline, for 60 s. Reported: what
//    every call ended with (OK, RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED are the only acceptable
//    answers), the OK rate ÷ the capacity (the target is ≥ 0.8), and every readiness status each
//    replica reported (grpc.health.v1 Watch) while a separate connection found PostgreSQL answering.
import { Code, ConnectError } from "@connectrpc/connect";
import type { ClientReadableStream } from "@grpc/grpc-js";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import pg from "pg";
import { RunnerService } from "../gen/toolruntime/v1/runner_pb.js";
import { createGrpcJsClient } from "../test/support/grpc-js-client.js";
import { createProtoLoaderClient } from "../test/support/proto-loader-client.js";
import { startPostgres } from "../test/support/postgres-server.js";
import { startReplicas, type Replicas } from "../test/support/replica-processes.js";

const log = (line: string): void => void process.stdout.write(`${line}\n`);

const { values: flags } = parseArgs({
  options: {
    "capacity-s": { type: "string", default: "10" },
    "overload-s": { type: "string", default: "60" },
    "deadline-ms": { type: "string", default: "2000" },
  },
});
const capacityS = Number(flags["capacity-s"]);
const overloadS = Number(flags["overload-s"]);
const deadlineMs = Number(flags["deadline-ms"]);

type Runner = ReturnType<typeof createGrpcJsClient<typeof RunnerService>>;

/** Counts of outcomes by status name ("OK", "ResourceExhausted"…). */
class Outcomes {
  readonly counts = new Map<string, number>();
  add(outcome: string): void {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1);
  }
  get(outcome: string): number {
    return this.counts.get(outcome) ?? 0;
  }
  get total(): number {
    let total = 0;
    for (const count of this.counts.values()) total += count;
    return total;
  }
}

/** One ExecuteTool of builtin.noop with a deadline: its outcome's status name. */
async function executeOnce(runner: Runner, timeoutMs: number): Promise<string> {
  try {
    const response = await runner.client.executeTool({ toolName: "builtin.noop", inputs: {} }, { timeoutMs });
    return response.result?.success ? "OK" : `failed ${response.result?.error?.errorType ?? "?"}`;
  } catch (error) {
    if (!(error instanceof ConnectError)) return `not a status: ${String(error)}`;
    if (error.code === Code.Internal && internalMessages.size < 5) internalMessages.add(error.rawMessage);
    return Code[error.code];
  }
}

/** The first few distinct messages of INTERNAL answers, to say what they were. */
const internalMessages = new Set<string>();

/** `callers` closed loops over `runners` for `seconds`: their outcomes. */
async function closedLoop(runners: Runner[], callers: number, seconds: number): Promise<Outcomes> {
  const outcomes = new Outcomes();
  const endsAt = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: callers }, async (_, index) => {
      const runner = runners[index % runners.length] as Runner;
      while (performance.now() < endsAt) outcomes.add(await executeOnce(runner, deadlineMs));
    }),
  );
  return outcomes;
}

/**
 * Calls sent at `rate` per second for `seconds`, each on the next replica in turn, whatever the
 * answers (a call is sent when due even if earlier ones still wait): their outcomes.
 */
async function pacedLoad(runners: Runner[], rate: number, seconds: number): Promise<Outcomes> {
  const outcomes = new Outcomes();
  const calls: Promise<void>[] = [];
  const startedAt = performance.now();
  const total = Math.round(rate * seconds);
  for (let sent = 0; sent < total; sent++) {
    const due = startedAt + (sent / rate) * 1000;
    const waitMs = due - performance.now();
    if (waitMs > 1) await new Promise((resolve) => setTimeout(resolve, waitMs));
    const runner = runners[sent % runners.length] as Runner;
    calls.push(executeOnce(runner, deadlineMs).then((outcome) => outcomes.add(outcome)));
  }
  await Promise.all(calls);
  return outcomes;
}

type HealthClient = ReturnType<typeof createProtoLoaderClient> & {
  Watch(request: { service: string }): ClientReadableStream<{ status: string }>;
};

/** Follows every replica's readiness: each status it reports, in order, per replica. */
function watchReadiness(replicas: Replicas): { seen: string[][]; stop: () => void } {
  const seen = replicas.grpcAddresses.map(() => [] as string[]);
  const watches = replicas.grpcAddresses.map((address, index) => {
    const health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", address) as HealthClient;
    const watch = health.Watch({ service: "" });
    watch.on("data", (message: { status: string }) => seen[index]?.push(message.status));
    watch.on("error", () => undefined);
    return { health, watch };
  });
  return {
    seen,
    stop: () => {
      for (const { health, watch } of watches) {
        watch.cancel();
        health.close();
      }
    },
  };
}

/** Pings PostgreSQL on a connection of its own every 200 ms: how many pings failed. */
function pingDatabase(url: string): { failures: () => number; stop: () => Promise<void> } {
  const client = new pg.Client({ connectionString: url, query_timeout: 2000 });
  client.on("error", () => undefined);
  let failures = 0;
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      await client.query("SELECT 1").catch(() => (failures += 1));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await client.end();
  })();
  return {
    failures: () => failures,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const describe = (outcomes: Outcomes): string =>
  [...outcomes.counts].map(([outcome, count]) => `${outcome} ${count}`).join(", ");

async function main(): Promise<void> {
  const postgres = await startPostgres();
  const replicas = await startReplicas(3, await postgres.createDatabase("overload"), []);
  // Four connections to each replica: one would queue calls in the client past the server's
  // 100 concurrent streams per connection, and those would miss their deadline before being sent.
  const runners = replicas.grpcAddresses.flatMap((address) =>
    Array.from({ length: 4 }, () => createGrpcJsClient(RunnerService, address)),
  );
  try {
    await (runners[0] as Runner).client.activateTool({ toolName: "builtin.noop" });
    // Warm-up: each replica's code paths compiled before anything is measured.
    await closedLoop(runners, 8, 3);

    // Callers double until the rate stops growing (by 5%): the closed loop's best is the capacity.
    let capacity = 0;
    let bestCallers = 0;
    for (const callers of [8, 16, 32, 64, 128, 256, 512]) {
      const outcomes = await closedLoop(runners, callers, capacityS);
      const rate = outcomes.get("OK") / capacityS;
      log(`capacity, ${callers} callers: ${rate.toFixed(0)} OK/s (${describe(outcomes)})`);
      const growing = rate > capacity * 1.05;
      if (rate > capacity) [capacity, bestCallers] = [rate, callers];
      if (!growing) break;
    }
    const offered = capacity * 2;
    log(`capacity: ${capacity.toFixed(0)} runs/s; overload: ${offered.toFixed(0)} calls/s for ${overloadS} s`);

    const readiness = watchReadiness(replicas);
    const ping = pingDatabase(postgres.url);
    const startedAt = performance.now();
    const generatorBefore = process.cpuUsage();
    const outcomes = await pacedLoad(runners, offered, overloadS);
    const elapsedS = (performance.now() - startedAt) / 1000;
    const generatorUsage = process.cpuUsage(generatorBefore);
    // Of one core: the load generator is this one process (grpc-js clients), and past about 0.9 of a
    // core it, not the replicas, is what falls behind (its calls then miss their deadlines unsent).
    const generatorCores = (generatorUsage.user + generatorUsage.system) / 1000 / (elapsedS * 1000);
    readiness.stop();
    await ping.stop();

    const okRate = outcomes.get("OK") / elapsedS;
    const acceptable = new Set(["OK", "ResourceExhausted", "DeadlineExceeded"]);
    const unacceptable = [...outcomes.counts.keys()].filter((outcome) => !acceptable.has(outcome));
    const notServing = readiness.seen.map((statuses) => statuses.filter((each) => each !== "SERVING").length);
    log("");
    log("| measure | value |");
    log("|---|---|");
    log(
      `| capacity (closed loop, callers doubled from 8 until the rate stops growing; best at ${bestCallers}) | ${capacity.toFixed(0)} runs/s |`,
    );
    log(`| offered in overload (paced, ${deadlineMs} ms deadline, ${overloadS} s) | ${offered.toFixed(0)} calls/s |`);
    log(`| calls in overload | ${outcomes.total} (${describe(outcomes)}) |`);
    log(
      `| OK rate in overload ÷ capacity (target ≥ 0.80) | ${(okRate / capacity).toFixed(2)} (${okRate.toFixed(0)} runs/s) |`,
    );
    log(
      `| answers other than OK, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED | ${unacceptable.length === 0 ? "none" : unacceptable.join(", ")} |`,
    );
    log(
      `| readiness reports other than SERVING, per replica | ${notServing.join(" / ")} (statuses: ${readiness.seen.map((each) => each.join(">")).join(" / ")}) |`,
    );
    log(`| PostgreSQL pings failed meanwhile | ${ping.failures()} |`);
    log(`| CPU of the load generator (this process), in cores | ${generatorCores.toFixed(2)} |`);
    if (generatorCores > 0.9) {
      log(
        "\nthe load generator used most of a core: the calls it could not send in time missed their deadlines in the client, so this run measures the generator, not the replicas",
      );
    }
    if (unacceptable.length > 0) {
      // What the replicas logged about the answers that should not be: the first few lines.
      const logged = replicas.processes
        .flatMap((each) => each.output().split("\n"))
        .filter((line) => /"level":50/.test(line));
      log(`\nerrors the replicas logged (${logged.length}; the first 5):\n${logged.slice(0, 5).join("\n")}`);
      log(`INTERNAL answers said: ${[...internalMessages].join(" | ")}`);
    }
    const met = unacceptable.length === 0 && okRate >= 0.8 * capacity && notServing.every((count) => count === 0);
    log(
      `\n${met ? "met" : "NOT met"}: every call answered OK, RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED, readiness SERVING throughout, OK rate ≥ 0.8 × capacity`,
    );
  } finally {
    for (const runner of runners) runner.close();
    await replicas.stop();
    await postgres.stop();
  }
}

await main();
