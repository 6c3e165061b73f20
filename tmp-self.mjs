import { readFileSync } from "node:fs";
const p = JSON.parse(readFileSync(process.argv[2]));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map(); let total = 0;
for (let i = 0; i < p.samples.length; i++) { const n = byId.get(p.samples[i]); const f = n.callFrame; if (f.functionName === "(idle)") continue; total += p.timeDeltas[i]; const k = `${f.functionName} ${f.url.split("/").slice(-2).join("/")}:${f.lineNumber}`; self.set(k, (self.get(k) ?? 0) + p.timeDeltas[i]); }
console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, v]) => `${(100*v/total).toFixed(1)}% ${k}`).join("\n"));
