/** The parts of a V8 .cpuprofile the summary reads. */
interface CpuProfile {
  readonly startTime: number;
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time of one function or area, in ms and as a share of the busy (non-idle) time. */
export interface SelfTime {
  readonly name: string;
  readonly ms: number;
  readonly share: number;
}

/** Where a profiled process spent its busy time. */
export interface ProfileSummary {
  readonly busyMs: number;
  readonly functions: readonly SelfTime[];
  /** The same time grouped by package or source folder. */
  readonly areas: readonly SelfTime[];
  /** Inclusive time (self and callees) of the JavaScript functions of packages and of the project. */
  readonly inclusive: readonly SelfTime[];
}

/** The package or folder a script URL belongs to: "@grpc/grpc-js", "src/runner", "node:internal/…". */
export function areaOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pkg?.[1]) return pkg[1];
  const own = url.match(/\/dist\/((?:src|gen|bench)\/(?:[^/]+\/)?)/);
  if (own?.[1]) return own[1].replace(/\/$/, "");
  const internal = url.match(/^node:(internal\/[^/]+|[^/]+)/);
  return internal?.[1] ? `node:${internal[1]}` : url;
}

function shortUrl(url: string): string {
  const pkg = url.match(/node_modules\/(.*)$/);
  if (pkg?.[1]) return pkg[1];
  const own = url.match(/\/dist\/(.*)$/);
  return own?.[1] ?? url;
}

function top(totals: Map<string, number>, busyMs: number, count: number): SelfTime[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => ({ name, ms, share: ms / busyMs }));
}

function frameName(frame: CpuProfile["nodes"][number]["callFrame"]): string {
  const location = frame.url === "" ? "" : ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
  return `${frame.functionName || "(anonymous)"}${location}`;
}

/** Whether a frame is JavaScript of a package or of the project (not Node's internals). */
function isApplicationCode(url: string): boolean {
  return url.includes("/node_modules/") || /\/dist\/(src|gen|bench)\//.test(url);
}

/** A span of a profile, in milliseconds since the profile started. */
export interface ProfileWindow {
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * Sums self time per function and per area, and inclusive time, over the samples of a CPU profile
 * that fall in `window` (all of them without one), leaving out idle time.
 */
export function summarizeProfile(profile: CpuProfile, count = 25, window?: ProfileWindow): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busyMs = 0;
  let atMs = 0;
  profile.samples.forEach((id, index) => {
    const frame = byId.get(id)?.callFrame;
    // timeDeltas[i] is the time since the previous sample: the time that sample stands for.
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    atMs += ms;
    if (window && (atMs < window.fromMs || atMs > window.toMs)) return;
    if (!frame || frame.functionName === "(idle)" || ms <= 0) return;
    busyMs += ms;
    const name = frameName(frame);
    functions.set(name, (functions.get(name) ?? 0) + ms);
    const area = areaOf(frame.url, frame.functionName);
    areas.set(area, (areas.get(area) ?? 0) + ms);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const caller = byId.get(at)?.callFrame;
      if (caller && isApplicationCode(caller.url)) onStack.add(frameName(caller));
    }
    for (const caller of onStack) inclusive.set(caller, (inclusive.get(caller) ?? 0) + ms);
  });
  return {
    busyMs,
    functions: top(functions, busyMs, count),
    areas: top(areas, busyMs, count),
    inclusive: top(inclusive, busyMs, count),
  };
}
