import { expect } from "chai";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root, where `.mocharc.json` and the built root hooks are. */
const root = fileURLToPath(new URL("../../../", import.meta.url));

/** Longest a run of one tiny spec may take to end; past it the run is killed and called hung. */
const hungAfterMs = 15_000;

/** Specs that start a server and leave it listening, or not, and pass or fail. */
const specs = {
  "failing-leak.spec.mjs": `import net from "node:net";
it("fails while a server it started still listens", () => {
  net.createServer().listen(0, "127.0.0.1");
  throw new Error("planned failure");
});`,
  "passing-leak.spec.mjs": `import net from "node:net";
it("passes and leaves a server listening", () => {
  net.createServer().listen(0, "127.0.0.1");
});`,
  "passing-clean.spec.mjs": `it("passes", () => {});`,
};

/** What one mocha run printed and how it ended; `code` is null when it had to be killed. */
interface RunEnd {
  readonly code: number | null;
  readonly output: string;
}

/** Runs mocha on `spec` with the repository's configuration, as `npm test` does. */
async function runMocha(spec: string): Promise<RunEnd> {
  const child = spawn(
    process.execPath,
    [path.join(root, "node_modules/mocha/bin/mocha.js"), "--config", ".mocharc.json", spec],
    { cwd: root },
  );
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const hung = setTimeout(() => child.kill("SIGKILL"), hungAfterMs);
  try {
    const [code, signal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null];
    return { code: signal === "SIGKILL" ? null : code, output };
  } finally {
    clearTimeout(hung);
  }
}

describe("How a mocha run of this repository ends", function () {
  this.timeout(hungAfterMs * 2);
  let directory: string;
  const ends = new Map<string, RunEnd>();

  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "mocha-run-end-"));
    await Promise.all(Object.entries(specs).map(([name, text]) => writeFile(path.join(directory, name), text)));
    const runs = Object.keys(specs).map(async (name) => ends.set(name, await runMocha(path.join(directory, name))));
    await Promise.all(runs);
  });
  after(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("exits non-zero after a failing test that left a server listening, naming what held the process", () => {
    const end = ends.get("failing-leak.spec.mjs") as RunEnd;
    expect(end.code, end.output).to.equal(1);
    expect(end.output).to.contain("planned failure").and.contain("1 failing");
    expect(end.output).to.match(/still running .* after the last test; what holds it: .*TCPServerWrap/);
  });

  it("exits non-zero after a passing run that left a server listening, naming what held the process", () => {
    const end = ends.get("passing-leak.spec.mjs") as RunEnd;
    expect(end.code, end.output).to.equal(1);
    expect(end.output).to.contain("1 passing");
    expect(end.output).to.match(/still running .* after the last test; what holds it: .*TCPServerWrap/);
  });

  it("exits 0 by itself after a passing run that left nothing behind, without a report", () => {
    const end = ends.get("passing-clean.spec.mjs") as RunEnd;
    expect(end.code, end.output).to.equal(0);
    expect(end.output).to.contain("1 passing").and.not.contain("what holds it");
  });
});
