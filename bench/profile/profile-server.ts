import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { LoadRequest } from "../cases/checks.js";
import { launchServer } from "../cases/launch-server.js";
import type { NoopResponses } from "../cases/probe-response.js";
import { loadRunOf, type WireVariant } from "../cases/wire-variants.js";
import { runH2load } from "../lib/h2load.js";
import { summarizeProfile, type ProfileSummary, type ProfileWindow } from "./summarize-profile.js";

/** A server profiled under load: what h2load saw and where the server's time went. */
export interface ProfiledRun {
  readonly variant: string;
  readonly callsPerSecond: number;
  /** Calls served while profiled (warm-up and measurement). */
  readonly calls: number;
  readonly summary: ProfileSummary;
}

/**
 * Runs `variant`'s server under `node --cpu-prof`, loads it like the benchmark does (warm-up, then
 * `measureS` seconds), stops it so that V8 writes the profile, and sums the profile's self time.
 */
export async function profileVariant(
  variant: WireVariant,
  settings: { warmupS: number; measureS: number; echo: NoopResponses },
): Promise<ProfiledRun> {
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-profile-"));
  try {
    const spawnedAt = performance.now();
    const server = await launchServer(variant.server, {
      echoResponse: settings.echo.execute,
      echoStream: settings.echo.runTool,
      nodeFlags: ["--cpu-prof", "--cpu-prof-dir", workDir],
    });
    let loaded;
    let warmedUp;
    let window: ProfileWindow | undefined;
    try {
      const baseUrl = (variant.port === "grpc" ? server.grpcUrl : server.httpUrl) ?? "";
      const load: LoadRequest = { url: `${baseUrl}${variant.path}`, headers: variant.headers, body: variant.body };
      await variant.check(baseUrl, load);
      const bodyFile = join(workDir, "body");
      await writeFile(bodyFile, variant.body);
      const run = loadRunOf(variant, load.url, { bodyFile, logFile: join(workDir, "h2load.log") });
      const loadStartedAt = performance.now();
      warmedUp = await runH2load(run(settings.warmupS));
      loaded = await runH2load(run(settings.measureS));
      // Only the samples taken under load count: start-up (module loading) and the check do not.
      window = { fromMs: loadStartedAt - spawnedAt, toMs: performance.now() - spawnedAt };
    } finally {
      await server.stop(10_000);
    }
    const file = (await readdir(workDir)).find((name) => name.endsWith(".cpuprofile"));
    if (!file) throw new Error(`${variant.id}: the server wrote no CPU profile`);
    const profile = JSON.parse(await readFile(join(workDir, file), "utf8")) as Parameters<typeof summarizeProfile>[0];
    return {
      variant: variant.id,
      callsPerSecond: loaded.requestsPerSecond,
      // The window spans the warm-up too: count every call served in it.
      calls: warmedUp.succeeded + loaded.succeeded,
      summary: summarizeProfile(profile, 30, window),
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
