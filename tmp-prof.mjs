import { readFileSync } from "node:fs";
const p = JSON.parse(readFileSync(process.argv[2]));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
// find long contiguous runs of non-idle samples: approximate tasks
const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
let t = p.startTime, runStart = null, runs = [];
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  const busy = !idle.has(p.samples[i]);
  if (busy && runStart === null) runStart = { t, i };
  if (!busy && runStart !== null) { runs.push({ ms: (t - runStart.t) / 1000, i0: runStart.i, i1: i }); runStart = null; }
}
runs.sort((a, b) => b.ms - a.ms);
console.log("longest busy stretches ms:", runs.slice(0, 8).map((r) => r.ms.toFixed(1)).join(", "));
// for the longest 3, self-time top functions
for (const r of runs.slice(0, 3)) {
  const self = new Map();
  for (let i = r.i0; i < r.i1; i++) { const n = byId.get(p.samples[i]); const k = `${n.callFrame.functionName} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + 1); }
  console.log(`--- stretch ${r.ms.toFixed(1)} ms`);
  console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([k, v]) => `${v} ${k}`).join("\n"));
}
