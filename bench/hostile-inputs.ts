/**
 * Hostile inputs against a real server, each while health is probed: starts `node dist/src/main.js`
 * (the Node flags it ships with, the hostile tools of test/support/hostile-tools.ts, a health port)
 * and, for each case, sends the hostile request(s) while probing, back to back and each on a
 * connection of its own as a kubelet would: GET /healthz on the HTTP port, grpc.health.v1 Check on
 * the gRPC port, GET /healthz on the health port. Reports each case's answer and the slowest probe
 * of each kind while it ran, and a bystander's echo run after it.
 *
 *   npx tsc -b && node dist/bench/hostile-inputs.js [--cases 1,4] [--json]
 */
import { once } from "node:events";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { startFlood } from "../test/support/flood-client.js";
import { probeHealthCheck, probeHttpHealth } from "../test/support/health-probes.js";
import { doublingChain } from "../test/support/hostile-tools.js";
import { startMainProcess, type MainProcess } from "../test/support/main-process.js";

/** The slowest answer of one kind of probe while a case ran, and how many were answered. */
interface ProbeWorst {
  readonly worstMs: number;
  readonly count: number;
  readonly failures: number;
}

/** One case's outcome. */
interface CaseResult {
  readonly name: string;
  readonly answer: string;
  readonly healthz: ProbeWorst;
  readonly check: ProbeWorst;
  readonly healthPort: ProbeWorst;
  /** Whether a bystander's echo run succeeded right after the case, and the server was still up. */
  readonly bystanderServed: boolean;
}

/** A hostile case: sends its request(s) and describes the answer in one line. */
interface HostileCase {
  readonly name: string;
  run(server: Servers): Promise<string>;
}

interface Servers {
  readonly httpUrl: string;
  readonly grpcAddress: string;
  readonly healthUrl: string;
}

const { values: flags } = parseArgs({
  options: { cases: { type: "string" }, json: { type: "boolean", default: false } },
});

/** POSTs `body` (already a JSON text) to a Connect method; "status: first words of the answer". */
async function connectJson(httpUrl: string, method: string, body: string): Promise<string> {
  const response = await fetch(`${httpUrl}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return summarise(response.status, await response.text());
}

function summarise(status: number, text: string): string {
  const parsed = tryParse(text) as
    | {
        code?: string;
        message?: string;
        result?: { success?: boolean; error?: { errorType?: string; details?: string } };
      }
    | undefined;
  const outcome = parsed?.result
    ? parsed.result.success
      ? "success"
      : `${parsed.result.error?.errorType}: ${parsed.result.error?.details ?? ""}`
    : parsed?.code
      ? `${parsed.code}: ${parsed.message ?? ""}`
      : text;
  return `${status} ${outcome}`.replace(/\s+/g, " ").slice(0, 150);
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const integers = (count: number, from = 0): number[] => Array.from({ length: count }, (_, index) => from + index);
const execute = (servers: Servers, toolName: string, inputs: JsonObject): Promise<string> =>
  connectJson(servers.httpUrl, "toolruntime.v1.RunnerService/ExecuteTool", JSON.stringify({ toolName, inputs }));
const register = (servers: Servers, name: string, inputSchema: JsonObject): Promise<string> =>
  connectJson(
    servers.httpUrl,
    "toolruntime.v1.RegistryService/RegisterTool",
    JSON.stringify({ spec: { name, inputSchema } }),
  );

const cases: HostileCase[] = [
  {
    name: "RegisterTool: an anyOf $ref chain of 24 levels, each referring twice to the next",
    run: (servers) =>
      register(servers, "hostile.any_chain", {
        type: "object",
        properties: { x: { $ref: "#/$defs/l0" } },
        $defs: doublingChain("anyOf", 24, { type: "string" }),
      }),
  },
  {
    name: "RegisterTool: an allOf $ref chain of depth 32",
    run: (servers) =>
      register(servers, "hostile.all_chain", {
        type: "object",
        properties: { x: { $ref: "#/$defs/l0" } },
        $defs: doublingChain("allOf", 32, { type: "integer" }),
      }),
  },
  {
    name: "RegisterTool: 2,000 patternProperties",
    run: (servers) =>
      register(servers, "hostile.patterns", {
        type: "object",
        patternProperties: Object.fromEntries(integers(2000).map((index) => [`^p${index}_`, {}])),
      }),
  },
  {
    name: "uniqueItems without an item type over 50,000 integers",
    run: (servers) => execute(servers, "hostile.unique", { a: integers(50_000) }),
  },
  {
    name: "uniqueItems over 20,000 objects and one duplicate",
    run: (servers) =>
      execute(servers, "hostile.unique", {
        a: [...integers(20_000).map((id) => ({ id, name: `n${id}` })), { name: "n5", id: 5 }],
      }),
  },
  {
    name: "an item enum of 10,000 values, 10,000 misses",
    run: (servers) => execute(servers, "hostile.enum", { a: integers(10_000, 10_000) }),
  },
  {
    name: "contains over an anyOf of 500 consts, 20,000 items",
    run: (servers) => execute(servers, "hostile.contains", { a: integers(20_000) }),
  },
  {
    name: "contains over a recursive anyOf, 5,000 items",
    run: (servers) => execute(servers, "hostile.nested", { a: integers(5_000).map(() => 1) }),
  },
  {
    name: 'Connect JSON of 1.2 MB: {"a":[1]*390000} to builtin.echo',
    run: (servers) => execute(servers, "builtin.echo", { a: Array.from({ length: 390_000 }, () => 1) }),
  },
  {
    name: "Connect JSON nested 1,000,000 deep",
    run: (servers) =>
      connectJson(
        servers.httpUrl,
        "toolruntime.v1.RunnerService/ExecuteTool",
        `{"toolName":"builtin.echo","inputs":{"a":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}}`,
      ),
  },
  {
    name: "MCP tools/call nested 1,000,000 deep",
    run: async (servers) => {
      const response = await fetch(`${servers.httpUrl}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"builtin.echo","arguments":{"a":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}}}`,
      });
      return `${response.status} ${(await response.text()).replace(/\s+/g, " ").slice(0, 140)}`;
    },
  },
  ...(["HTTP", "gRPC"] as const).map((port): HostileCase => ({
    name: `a flood on the ${port} port: 100 connections × 100 RunTool calls (builtin.sleep 3 s)`,
    run: async (servers) => {
      const url = port === "HTTP" ? servers.httpUrl : `http://${servers.grpcAddress}`;
      const flood = startFlood(url, 100, 100, "builtin.sleep", 4096, { inputs: { ms: 3000 } });
      try {
        const report = await flood.report;
        const finished = await flood.finished;
        return `codes ${JSON.stringify(finished.codes)}, resets ${JSON.stringify(report.resets)}`;
      } finally {
        await flood.release();
      }
    },
  })),
  {
    name: "4,096 idle connections from one address (127.0.0.2) to the HTTP port",
    run: async (servers) => {
      const url = new URL(servers.httpUrl);
      const sockets: net.Socket[] = [];
      let refused = 0;
      for (let index = 0; index < 4096; index++) {
        const socket = net.connect({ host: url.hostname, port: Number(url.port), localAddress: "127.0.0.2" });
        socket.on("error", () => undefined);
        socket.once("close", () => (refused += 1));
        sockets.push(socket);
      }
      await Promise.all(sockets.map((socket) => once(socket, "connect").catch(() => undefined)));
      // The server closes what it refuses as it arrives: give those closes a moment to be read.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const held = sockets.filter((socket) => !socket.destroyed).length;
      for (const socket of sockets) socket.destroy();
      return `${held} still open after 0.5 s (the rest of the bound: waiting in the listen backlog), ${refused} closed by the server`;
    },
  },
];

/** Probes one kind of health over and over, each on a new connection, until `done()`. */
async function probeUntil(done: () => boolean, probe: () => Promise<void>): Promise<ProbeWorst> {
  let worstMs = 0;
  let count = 0;
  let failures = 0;
  while (!done()) {
    const started = performance.now();
    try {
      await probe();
      count += 1;
    } catch {
      failures += 1;
    }
    worstMs = Math.max(worstMs, performance.now() - started);
  }
  return { worstMs, count, failures };
}

async function runCase(hostile: HostileCase, servers: Servers, main: MainProcess): Promise<CaseResult> {
  let done = false;
  const answer = hostile.run(servers).then(
    (text) => text,
    (error: unknown) => `failed: ${(error as Error).message}`,
  );
  void answer.finally(() => (done = true));
  const [healthz, checkWorst, healthPort] = await Promise.all([
    probeUntil(
      () => done,
      () => probeHttpHealth(`${servers.httpUrl}/healthz`),
    ),
    probeUntil(
      () => done,
      () => probeHealthCheck(servers.grpcAddress),
    ),
    probeUntil(
      () => done,
      () => probeHttpHealth(`${servers.healthUrl}/healthz`),
    ),
  ]);
  const echo = await execute(servers, "builtin.echo", { after: hostile.name.slice(0, 20) }).catch(
    (error: unknown) => `failed: ${(error as Error).message}`,
  );
  return {
    name: hostile.name,
    answer: await answer,
    healthz,
    check: checkWorst,
    healthPort,
    bystanderServed: echo.startsWith("200 success") && main.child.exitCode === null,
  };
}

const chosen = flags.cases ? flags.cases.split(",").map((index) => cases[Number(index) - 1] as HostileCase) : cases;
const main = await startMainProcess(["--tools", "dist/test/support/hostile-tools.js", "--health-port", "0"]);
const healthUrl = /health: +(http:\/\/\S+)/.exec(main.output())?.[1] ?? "";
const servers: Servers = { httpUrl: main.httpUrl, grpcAddress: main.grpcAddress, healthUrl };
const results: CaseResult[] = [];
try {
  for (const tool of ["builtin.echo", "hostile.unique", "hostile.enum", "hostile.contains", "hostile.nested"]) {
    await connectJson(main.httpUrl, "toolruntime.v1.RunnerService/ActivateTool", JSON.stringify({ toolName: tool }));
  }
  for (const hostile of chosen) {
    const result = await runCase(hostile, servers, main);
    results.push(result);
    if (!flags.json) process.stderr.write(`${result.name}: ${result.answer}\n`);
  }
} finally {
  main.child.kill("SIGTERM");
  await main.exited;
}

const ms = (worst: ProbeWorst): string =>
  `${Math.round(worst.worstMs)} (${worst.count}${worst.failures > 0 ? `, ${worst.failures} failed` : ""})`;
if (flags.json) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  process.stdout.write(
    "| case | answer | slowest /healthz, HTTP port, ms (probes) | slowest Check, gRPC port | slowest /healthz, health port | bystander served after |\n|---|---|---|---|---|---|\n",
  );
  for (const result of results) {
    process.stdout.write(
      `| ${result.name} | ${result.answer.replaceAll("|", "\\|")} | ${ms(result.healthz)} | ${ms(result.check)} | ${ms(result.healthPort)} | ${result.bystanderServed ? "yes" : "NO"} |\n`,
    );
  }
}
