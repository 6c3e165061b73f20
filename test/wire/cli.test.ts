import { createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { expect } from "chai";
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { runCli, type CliIo } from "../../src/cli/run-cli.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

/** A stdout or stderr that keeps what is written and lets a test wait until some text arrives. */
class Output extends Writable {
  text = "";
  isTTY?: boolean;
  columns?: number;
  private readonly waiters: { pattern: RegExp; resolve: () => void }[] = [];

  constructor(terminal?: { columns: number }) {
    super();
    if (terminal !== undefined) {
      this.isTTY = true;
      this.columns = terminal.columns;
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.text += chunk.toString();
    for (const waiter of [...this.waiters]) {
      if (waiter.pattern.test(this.text)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
    callback();
  }

  /** Resolves once the text written so far matches `pattern`. */
  waitFor(pattern: RegExp): Promise<void> {
    if (pattern.test(this.text)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ pattern, resolve }));
  }

  /** The text as parsed JSON lines. */
  jsonLines(): Record<string, unknown>[] {
    return this.text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

interface Captured {
  code: number;
  stdout: Output;
  stderr: Output;
}

/** Runs the client in-process with a non-TTY stdout (unless `stdout` is given). */
async function cli(
  args: string[],
  options: { stdout?: Output; signal?: AbortSignal; env?: NodeJS.ProcessEnv } = {},
): Promise<Captured> {
  const stdout = options.stdout ?? new Output();
  const stderr = new Output();
  const io: CliIo = {
    stdout,
    stderr,
    env: options.env ?? {},
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

/** Starts `node dist/src/cli/bin.js ARGS` and collects its output. */
function spawnBin(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  stdout: Output;
  stderr: Output;
  exit: Promise<number | null>;
} {
  const child = spawn(process.execPath, ["dist/src/cli/bin.js", ...args], {
    env: { ...process.env, TOOLRUNTIME_ADDRESS: "", TOOLRUNTIME_TOKEN: "" },
  });
  const stdout = new Output();
  const stderr = new Output();
  child.stdout.pipe(stdout);
  child.stderr.pipe(stderr);
  const exit = once(child, "exit").then(([code]) => code as number | null);
  return { child, stdout, stderr, exit };
}

type JsonEvent = Record<string, unknown> & { sequence: string };

/** The oneof case of a RunEvent in its JSON form ("discovered", "progress", …). */
function kindOf(event: Record<string, unknown>): string {
  const kinds = [
    "discovered",
    "activated",
    "executionStarted",
    "progress",
    "heartbeat",
    "executionFinished",
    "deactivated",
    "completed",
  ];
  return kinds.find((kind) => kind in event) ?? "unknown";
}

describe("The toolruntime client (src/cli)", () => {
  let server: RunningServer;
  let address: string;

  before(async () => {
    server = await startTestServer();
    address = server.grpcAddress;
  });
  after(async () => {
    await server.close(0);
  });

  describe("tools list and tools get", () => {
    it("lists every tool as one ToolSpec JSON object per line when stdout is not a terminal", async () => {
      const { code, stdout, stderr } = await cli(["tools", "list", "--address", address]);
      expect(code, stderr.text).to.equal(0);
      const specs = stdout.jsonLines();
      const names = specs.map((spec) => spec["name"]);
      expect(names).to.include("builtin.echo");
      expect(names).to.include("test.throw_string");
      expect(names).to.deep.equal([...names].sort());
      const echo = specs.find((spec) => spec["name"] === "builtin.echo");
      expect(echo).to.include({ toolType: "function", hasHandler: true });
    });

    it("filters by namespace and reads the address from TOOLRUNTIME_ADDRESS", async () => {
      const { code, stdout } = await cli(["tools", "list", "--namespace", "builtin"], {
        env: { TOOLRUNTIME_ADDRESS: address },
      });
      expect(code).to.equal(0);
      const names = stdout.jsonLines().map((spec) => spec["name"] as string);
      expect(names).to.include("builtin.countdown");
      expect(names.every((name) => name.startsWith("builtin."))).to.equal(true);
    });

    it("prints a table cut to the terminal's width on a TTY", async () => {
      const stdout = new Output({ columns: 80 });
      const { code } = await cli(["tools", "list", "--namespace", "builtin", "--address", address], { stdout });
      expect(code).to.equal(0);
      const lines = stdout.text.trimEnd().split("\n");
      expect(lines[0]).to.match(/^NAME +TYPE +FLAGS +HANDLER +DESCRIPTION$/);
      expect(lines.find((line) => line.startsWith("builtin.echo "))).to.match(
        /^builtin\.echo +function +ro,idem +yes +Returns its inputs/,
      );
      expect(lines.every((line) => line.length < 80)).to.equal(true);
      expect(stdout.text).to.contain("…");
    });

    it("gets one spec as JSON", async () => {
      const { code, stdout } = await cli(["tools", "get", "builtin.echo", "--address", address]);
      expect(code).to.equal(0);
      const spec = JSON.parse(stdout.text) as Record<string, unknown>;
      expect(spec).to.include({ name: "builtin.echo", toolType: "function", hasHandler: true });
      expect(spec["capabilities"]).to.deep.equal({ readOnly: true, idempotent: true });
      expect(spec["outputSchema"]).to.have.property("required");
    });

    it("exits 3 with the status code and error type for a tool that does not exist", async () => {
      const { code, stdout, stderr } = await cli(["tools", "get", "no.such_tool", "--address", address]);
      expect(code).to.equal(3);
      expect(stdout.text).to.equal("");
      expect(stderr.text).to.contain(`GetTool on "${address}" failed with NOT_FOUND: `);
      expect(stderr.text).to.contain("error type: NotFoundError");
    });
  });

  describe("run", () => {
    it("streams one JSON line per event, discovered to completed, and exits 0", async () => {
      const { code, stdout, stderr } = await cli([
        "run",
        "builtin.countdown",
        "--input",
        '{"from":2,"interval_ms":10}',
        "--address",
        address,
      ]);
      expect(code, stderr.text).to.equal(0);
      const events = stdout.jsonLines() as JsonEvent[];
      const kinds = events.map(kindOf);
      expect(kinds.slice(0, 3)).to.deep.equal(["discovered", "activated", "executionStarted"]);
      expect(kinds.slice(-3)).to.deep.equal(["executionFinished", "deactivated", "completed"]);
      expect(kinds).to.include("progress");
      expect(events.map((event) => event.sequence)).to.deep.equal(events.map((_, index) => String(index + 1)));
      const completed = events.at(-1)?.["completed"] as { result: Record<string, unknown> };
      expect(completed.result["success"]).to.equal(true);
      expect(completed.result["output"]).to.deep.equal({ counted: 2 });
    });

    it("exits 1 when the run fails, with the failed result in the last line", async () => {
      const { code, stdout, stderr } = await cli(["run", "test.throw_string", "--address", address]);
      expect(code).to.equal(1);
      expect(stderr.text).to.equal("");
      const completed = stdout.jsonLines().at(-1)?.["completed"] as { result: Record<string, unknown> };
      expect(completed.result["success"]).to.equal(undefined);
      expect(completed.result["error"]).to.include({ toolName: "test.throw_string", errorType: "HandlerError" });
    });

    it("exits 3 printing NOT_FOUND and NotFoundError for a tool that does not exist", async () => {
      const { code, stdout, stderr } = await cli(["run", "no.such_tool", "--address", address]);
      expect(code).to.equal(3);
      expect(stdout.text).to.equal("");
      expect(stderr.text).to.match(/^toolruntime: RunTool on "[^"]+" failed with NOT_FOUND: .*no\.such_tool/);
      expect(stderr.text).to.contain("error type: NotFoundError");
    });

    it("exits 2 saying exactly what is wrong with --input", async () => {
      const bad = await cli(["run", "builtin.echo", "--input", "{bad", "--address", address]);
      expect(bad.code).to.equal(2);
      expect(bad.stdout.text).to.equal("");
      expect(bad.stderr.text).to.contain(
        `toolruntime: --input "{bad" is not valid JSON: expected property name or '}' in JSON at position 1`,
      );
      expect(bad.stderr.text).to.contain(`pass one JSON object, for example --input '{"a":1}'`);

      const array = await cli(["run", "builtin.echo", "--input", "[1]"]);
      expect(array.code).to.equal(2);
      expect(array.stderr.text).to.contain('--input "[1]" is an array, not a JSON object');
    });

    it("reads the inputs from --input-file, and prints JSON lines on a terminal with --json", async () => {
      const directory = mkdtempSync(join(tmpdir(), "toolruntime-cli-input-"));
      try {
        const path = join(directory, "inputs.json");
        writeFileSync(path, '{"from": 1, "interval_ms": 0}\n');
        const stdout = new Output({ columns: 80 });
        const { code } = await cli(["run", "builtin.countdown", "--input-file", path, "--json", "--address", address], {
          stdout,
        });
        expect(code).to.equal(0);
        const completed = stdout.jsonLines().at(-1)?.["completed"] as { result: Record<string, unknown> };
        expect(completed.result["output"]).to.deep.equal({ counted: 1 });

        writeFileSync(path, "not json");
        const bad = await cli(["run", "builtin.countdown", "--input-file", path]);
        expect(bad.code).to.equal(2);
        expect(bad.stderr.text).to.contain(
          `--input-file "${path}" is not valid JSON: unexpected token 'o'; pass one JSON object`,
        );
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });

    it("exits 2 for bad flags, arguments and settings, naming each", async () => {
      const cases: [string[], string][] = [
        [["run", "builtin.echo", "--bogus"], 'unknown option "--bogus" for "toolruntime run"'],
        [["run"], 'missing tool name: write "toolruntime run NAME"'],
        [["run", "builtin.echo", "--timeout-ms", "-5"], 'option "--timeout-ms" needs a value'],
        [["run", "builtin.echo", "--timeout-ms", "soon"], '--timeout-ms "soon" is invalid: use a whole number'],
        [["run", "builtin.echo", "--input", "{}", "--input-file", "x.json"], "--input and --input-file are both given"],
        [
          ["run", "builtin.echo", "--input-file", "no/such/file.json"],
          '--input-file "no/such/file.json" cannot be read',
        ],
        [["run", "builtin.echo", "--address", "localhost"], '--address "localhost" is invalid: use HOST:PORT'],
        [["run", "builtin.echo", "--tls-cert", "c.pem"], "--tls-cert needs --tls-key"],
        [["watch", "extra"], 'unexpected argument "extra": "toolruntime watch" takes no arguments'],
        [["watch", "--from-version", "v1"], '--from-version "v1" is invalid'],
        [["tools"], '"toolruntime tools" needs a subcommand'],
        [["tools", "remove"], 'unknown subcommand "remove" of "toolruntime tools"'],
        [["tools", "list", "--json=yes"], 'option "--json" takes no value'],
      ];
      for (const [args, message] of cases) {
        const { code, stdout, stderr } = await cli(args);
        expect(code, args.join(" ")).to.equal(2);
        expect(stdout.text, args.join(" ")).to.equal("");
        expect(stderr.text, args.join(" ")).to.contain(message);
      }
      const fromEnv = await cli(["tools", "list"], { env: { TOOLRUNTIME_ADDRESS: "nowhere" } });
      expect(fromEnv.code).to.equal(2);
      expect(fromEnv.stderr.text).to.contain('TOOLRUNTIME_ADDRESS "nowhere" is invalid');
    });

    it("exits 3 with UNAVAILABLE and a hint when no server listens", async () => {
      const { code, stderr } = await cli(["run", "builtin.echo", "--address", "127.0.0.1:1"]);
      expect(code).to.equal(3);
      expect(stderr.text).to.contain('RunTool on "127.0.0.1:1" failed with UNAVAILABLE');
      expect(stderr.text).to.contain('hint: check that a toolruntime server listens on "127.0.0.1:1"');
    });

    it("cancels the run on the server when its signal aborts, and exits 130", async () => {
      const stdout = new Output();
      const abort = new AbortController();
      const aborted = once(testToolEvents, "aborted") as Promise<[string, string]>;
      const running = cli(["run", "test.wait_for_cancel", "--address", address], { stdout, signal: abort.signal });
      await stdout.waitFor(/"progress"/);
      abort.abort();
      const { code, stderr } = await running;
      expect(code).to.equal(130);
      expect(stderr.text).to.contain("RunTool interrupted; the call was cancelled");
      const [executionId] = await aborted;
      expect(stdout.jsonLines()[0]?.["executionId"]).to.equal(executionId);
    });

    it("draws stages, a progress bar redrawn in place and the output on a terminal", async () => {
      const stdout = new Output({ columns: 80 });
      const { code } = await cli(
        ["run", "builtin.countdown", "--input", '{"from":2,"interval_ms":10}', "--address", address],
        { stdout },
      );
      expect(code).to.equal(0);
      const text = stdout.text;
      expect(text).to.match(
        /^ {2}execution +[0-9a-f-]{36}\n {2}discovered +builtin\.countdown \(function; ro,idem\)\n/,
      );
      expect(text).to.contain("  started      attempt 1, timeout 600,000 ms\n");
      // The bar is redrawn in place (carriage return, erase line); the last report is always delivered.
      const eraseLine = "\r\u001b[2K";
      expect(text).to.contain(`${eraseLine}[${"█".repeat(26)}] 100% done\n`);
      const frames = text.split(eraseLine).slice(1);
      expect(frames.length).to.be.at.least(1);
      expect(frames.every((frame) => /^\[[█░]{26}\] +\d+% /.test(frame))).to.equal(true);
      expect(text).to.match(
        / {2}finished +succeeded in [0-9.]+ ms\n {2}deactivated\n✔ succeeded in [0-9.]+ ms; output:\n/,
      );
      expect(text).to.match(/\{\n {2}"counted": 2\n\}\n$/);
      const drawn = text.split(/[\r\n]/).map((line) => line.replace("\u001b[2K", ""));
      expect(drawn.every((line) => line.length < 80)).to.equal(true);
    });

    it("shows a failed run's error type and details on a terminal", async () => {
      const stdout = new Output({ columns: 80 });
      const { code } = await cli(
        ["run", "test.throw_error", "--input", '{"message":"no disk"}', "--address", address],
        {
          stdout,
        },
      );
      expect(code).to.equal(1);
      expect(stdout.text).to.match(/✘ failed with HandlerError after [0-9.]+ ms\n {2}.*no disk/);
    });
  });

  describe("watch", () => {
    it("prints the snapshot, then a tool registered meanwhile, until its signal aborts (exit 130)", async () => {
      const stdout = new Output();
      const abort = new AbortController();
      const watching = cli(["watch", "--address", address], { stdout, signal: abort.signal });
      await stdout.waitFor(/"TOOL_CHANGE_TYPE_SNAPSHOT_END"/);
      const name = uniqueName("cli.watched");
      const sessionManager = new Http2SessionManager(`http://${address}`);
      const registry = createClient(
        RegistryService,
        createGrpcTransport({ baseUrl: `http://${address}`, sessionManager }),
      );
      await registry.registerTool({ spec: { name, description: "registered while watching" } });
      await stdout.waitFor(new RegExp(`"TOOL_CHANGE_TYPE_ADDED".*"${name.replace(/\./g, "\\.")}"`));
      abort.abort();
      const { code } = await watching;
      expect(code).to.equal(130);
      const changes = stdout.jsonLines();
      expect(changes.some((change) => change["type"] === "TOOL_CHANGE_TYPE_SNAPSHOT")).to.equal(true);
      const added = changes.find((change) => change["type"] === "TOOL_CHANGE_TYPE_ADDED");
      expect(added?.["spec"]).to.include({ name, description: "registered while watching" });
      await registry.removeTool({ name });
      sessionManager.abort();
    });
  });

  describe("help", () => {
    it("documents every option of each command with its default", async () => {
      for (const command of [["tools", "list"], ["tools", "get"], ["run"], ["watch"]]) {
        const { code, stdout } = await cli([...command, "--help"]);
        expect(code).to.equal(0);
        for (const flag of ["--address", "--token", "--tls-ca", "--tls-cert", "--tls-key", "--help"]) {
          expect(stdout.text, `${command.join(" ")} ${flag}`).to.contain(flag);
        }
        const optionLines = stdout.text.split("\n").filter((line) => /^ {2}(-h, )?--/.test(line));
        expect(
          optionLines.every((line) => line.includes("default: ")),
          stdout.text,
        ).to.equal(true);
      }
      const run = await cli(["help", "run"]);
      expect(run.stdout.text).to.contain("--input JSON").and.contain("--timeout-ms N").and.contain("--input-file PATH");
      const top = await cli(["--help"]);
      expect(top.stdout.text).to.contain("tools list").and.contain("Any other arguments start the server");
    });
  });

  describe("as a child process (dist/src/cli/bin.js)", () => {
    it("runs builtin.echo and prints JSON lines", async () => {
      const { stdout, stderr, exit } = spawnBin(["run", "builtin.echo", "--input", '{"a":1}', "--address", address]);
      expect(await exit, stderr.text).to.equal(0);
      const events = stdout.jsonLines();
      expect(kindOf(events[0] ?? {})).to.equal("discovered");
      const completed = events.at(-1)?.["completed"] as { result: Record<string, unknown> };
      expect(completed.result["output"]).to.deep.equal({ echo: { a: 1 } });
    });

    it("cancels the run on SIGINT and exits 130", async () => {
      const aborted = once(testToolEvents, "aborted") as Promise<[string, string]>;
      const { child, stdout, stderr, exit } = spawnBin(["run", "test.wait_for_cancel", "--address", address]);
      await stdout.waitFor(/"progress"/);
      child.kill("SIGINT");
      expect(await exit, stderr.text).to.equal(130);
      const [executionId] = await aborted;
      expect(stdout.jsonLines()[0]?.["executionId"]).to.equal(executionId);
    });

    it("prints the client help for --help alone", async () => {
      const { stdout, exit } = spawnBin(["--help"]);
      expect(await exit).to.equal(0);
      expect(stdout.text).to.contain("usage: toolruntime COMMAND [options]");
      expect(stdout.text).to.contain("Any other arguments start the server");
    });

    it("starts the server for any other arguments", async () => {
      const { child, stdout, stderr, exit } = spawnBin(["--grpc-port", "0", "--http-port", "0", "--log-level", "warn"]);
      await Promise.race([
        stdout.waitFor(/toolruntime is serving[\s\S]*tools:/),
        exit.then((code) => Promise.reject(new Error(`exited with ${code}: ${stderr.text}`))),
      ]);
      const match = /gRPC: +(\S+)/.exec(stdout.text);
      const listed = await cli(["tools", "get", "builtin.noop", "--address", match?.[1] ?? ""]);
      expect(listed.code, listed.stderr.text).to.equal(0);
      child.kill("SIGTERM");
      expect(await exit).to.equal(0);
    });
  });

  describe("TLS and tokens", () => {
    let directory: string;
    let secureServer: Http2SecureServer;
    let secureAddress: string;
    const file = (name: string): string => join(directory, name);

    before(async () => {
      // openssl makes the certificates, as in the security tests; it is part of Debian's base system.
      directory = mkdtempSync(join(tmpdir(), "toolruntime-cli-"));
      const openssl = (...args: string[]): void => {
        execFileSync("openssl", args, { cwd: directory, stdio: "ignore" });
      };
      const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
      openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test-ca");
      writeFileSync(file("server.ext"), "subjectAltName=IP:127.0.0.1\n");
      for (const name of ["server", "client"]) {
        openssl("req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
        openssl(
          "x509",
          "-req",
          "-in",
          `${name}.csr`,
          "-CA",
          "ca.pem",
          "-CAkey",
          "ca.key",
          "-CAcreateserial",
          "-days",
          "1",
          "-out",
          `${name}.pem`,
          ...(name === "server" ? ["-extfile", "server.ext"] : []),
        );
      }
      const routes = (router: ConnectRouter): void => {
        router.service(RegistryService, {
          getTool: (request, context) => ({
            spec: { name: request.name, description: `authorization=${context.requestHeader.get("authorization")}` },
          }),
        });
      };
      secureServer = createSecureServer(
        {
          key: readFileSync(file("server.key")),
          cert: readFileSync(file("server.pem")),
          ca: readFileSync(file("ca.pem")),
          requestCert: true,
          rejectUnauthorized: true,
          allowHTTP1: false,
        },
        connectNodeAdapter({ routes }),
      );
      secureServer.listen(0, "127.0.0.1");
      await once(secureServer, "listening");
      secureAddress = `127.0.0.1:${(secureServer.address() as AddressInfo).port}`;
    });
    after(async () => {
      if (secureServer !== undefined) {
        await new Promise((resolve) => secureServer.close(resolve));
      }
      if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    });

    it("speaks mutual TLS and sends the bearer token", async () => {
      const tls = ["--tls-ca", file("ca.pem"), "--tls-cert", file("client.pem"), "--tls-key", file("client.key")];
      const { code, stdout, stderr } = await cli([
        "tools",
        "get",
        "x.y",
        "--address",
        secureAddress,
        ...tls,
        "--token",
        "s3cret",
      ]);
      expect(code, stderr.text).to.equal(0);
      expect(JSON.parse(stdout.text)).to.deep.equal({ name: "x.y", description: "authorization=Bearer s3cret" });

      const fromEnv = await cli(["tools", "get", "x.y", "--address", secureAddress, ...tls], {
        env: { TOOLRUNTIME_TOKEN: "from-env" },
      });
      expect(JSON.parse(fromEnv.stdout.text)).to.include({ description: "authorization=Bearer from-env" });
    });

    it("exits 3 when the server wants a client certificate and gets none", async () => {
      const { code, stderr } = await cli([
        "tools",
        "get",
        "x.y",
        "--address",
        secureAddress,
        "--tls-ca",
        file("ca.pem"),
      ]);
      expect(code).to.equal(3);
      expect(stderr.text).to.contain(`GetTool on "${secureAddress}" failed with`);
    });
  });
});
