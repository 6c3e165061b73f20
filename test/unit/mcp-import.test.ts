import { expect } from "chai";
import { pino } from "pino";
import { Writable } from "node:stream";
import { thrownBy } from "../support/expect-error.js";
import { toImportedFlags } from "../../src/mcp/import/annotation-flags.js";
import { listAllTools } from "../../src/mcp/import/list-all-tools.js";
import { mapToolNames, toToolSegment } from "../../src/mcp/import/map-tool-names.js";
import { toToolOutcome } from "../../src/mcp/import/to-tool-output.js";
import { checkDistinctNames, parseMcpServer } from "../../src/mcp/import/parse-mcp-server.js";
import { McpStartError, summariseStartFailure } from "../../src/mcp/import/mcp-start-error.js";
import { reportConnectFailure } from "../../src/mcp/import/report-connect-failure.js";
import { createStderrTail } from "../../src/mcp/import/stderr-tail.js";
import { superviseConnection } from "../../src/mcp/import/supervise-connection.js";
import { splitCommandLine } from "../../src/mcp/import/split-command-line.js";

describe("MCP import", () => {
  describe("splitCommandLine()", () => {
    it("splits on whitespace and keeps quoted and escaped text as one word", () => {
      expect(splitCommandLine(`node  'a b' "c \\"d\\"" e\\ f $HOME`)).to.deep.equal([
        "node",
        "a b",
        'c "d"',
        "e f",
        "$HOME",
      ]);
    });
    it("keeps an empty quoted word", () => {
      expect(splitCommandLine(`cmd '' ""`)).to.deep.equal(["cmd", "", ""]);
    });
    it("rejects unterminated quotes and a trailing backslash", () => {
      expect(() => splitCommandLine("a 'b")).to.throw("a single quote is not closed");
      expect(() => splitCommandLine('a "b')).to.throw("a double quote is not closed");
      expect(() => splitCommandLine("a \\")).to.throw("a backslash ends the command");
    });
  });

  describe("parseMcpServer()", () => {
    it("parses a stdio server with arguments", () => {
      expect(parseMcpServer("files=node server.js --root '/tmp/my dir'")).to.deep.equal({
        kind: "stdio",
        name: "files",
        command: "node",
        args: ["server.js", "--root", "/tmp/my dir"],
      });
    });
    it("parses an HTTP server", () => {
      const spec = parseMcpServer("web=https://example.com/mcp");
      expect(spec.kind).to.equal("http");
      expect(spec.kind === "http" && spec.url.href).to.equal("https://example.com/mcp");
    });
    it("names the value and the rule for a bad NAME", () => {
      const error = thrownBy(() => parseMcpServer("Bad.Name=node x.js"));
      expect(error.code).to.equal("INVALID_ARGUMENT");
      expect(error.message).to.equal(
        '--mcp-server value "Bad.Name=node x.js" is invalid: mcp server name "Bad.Name" is invalid: use a lowercase ASCII letter followed by up to 63 lowercase letters, digits, "_" or "-"',
      );
    });
    it('rejects a value without "=", an empty NAME, an empty command and a bad quote', () => {
      expect(thrownBy(() => parseMcpServer("node")).message).to.match(/expected NAME=COMMAND/);
      expect(thrownBy(() => parseMcpServer("=node")).message).to.match(/NAME is empty$/);
      expect(thrownBy(() => parseMcpServer("x=  ")).message).to.match(/is empty$/);
      expect(thrownBy(() => parseMcpServer("x=node 'a")).message).to.match(/a single quote is not closed$/);
    });
    it("rejects two servers with one NAME", () => {
      const servers = [parseMcpServer("a=node x.js"), parseMcpServer("a=http://127.0.0.1:1/mcp")];
      expect(thrownBy(() => checkDistinctNames(servers)).message).to.equal(
        'mcp server name "a" is given twice: give each --mcp-server a distinct NAME',
      );
    });
  });

  describe("mapToolNames()", () => {
    it("lowercases and replaces invalid characters", () => {
      expect(toToolSegment("Get-Weather")).to.equal("get-weather");
      expect(toToolSegment("do it.now!")).to.equal("do_it_now_");
      expect(toToolSegment("9lives")).to.equal("t9lives");
      expect(toToolSegment("")).to.equal(undefined);
    });
    it("registers neither of two names that collide and reports both", () => {
      const { mapped, refused } = mapToolNames("w", ["Get.Weather", "get_weather", "echo"]);
      expect([...mapped]).to.deep.equal([["mcp.w.echo", "echo"]]);
      expect(refused.map((entry) => entry.mcpName)).to.deep.equal(["Get.Weather", "get_weather"]);
      expect(refused[0]?.reason).to.equal(
        'MCP tool names "Get.Weather", "get_weather" all map to "mcp.w.get_weather": none of them is registered',
      );
    });
    it("refuses a name that cannot be mapped", () => {
      expect(mapToolNames("w", [""]).refused[0]?.reason).to.equal('MCP tool name "" cannot be mapped to a tool name');
    });
  });

  describe("toImportedFlags()", () => {
    const none = { hints: false, idempotent: false };
    it("ignores every hint by default: writes, never idempotent", () => {
      const hints = { readOnlyHint: true, idempotentHint: true, destructiveHint: false };
      expect(toImportedFlags(hints, none)).to.deep.equal({ readOnly: false, writes: true, idempotent: false });
      expect(toImportedFlags(undefined, none)).to.deep.equal({ readOnly: false, writes: true, idempotent: false });
    });
    it("makes a tool read_only only when hints are trusted", () => {
      expect(toImportedFlags({ readOnlyHint: true }, { hints: true, idempotent: false })).to.deep.equal({
        readOnly: true,
        writes: false,
        idempotent: false,
      });
    });
    it("makes a tool idempotent only when idempotency is trusted", () => {
      const trust = { hints: false, idempotent: true };
      expect(toImportedFlags({ idempotentHint: true }, trust).idempotent).to.equal(true);
      expect(toImportedFlags({ idempotentHint: false }, trust).idempotent).to.equal(false);
    });
  });

  describe("toToolOutcome()", () => {
    it("fails with the text content as details when isError is true", () => {
      const outcome = toToolOutcome({
        isError: true,
        content: [
          { type: "text", text: "no" },
          { type: "text", text: "way" },
        ],
      });
      expect(outcome).to.deep.equal({ ok: false, details: "no\nway" });
    });
    it("prefers structuredContent", () => {
      const outcome = toToolOutcome({ structuredContent: { a: 1 }, content: [{ type: "text", text: '{"b":2}' }] });
      expect(outcome).to.deep.equal({ ok: true, output: { a: 1 } });
    });
    it("parses text that is a JSON object and wraps any other text", () => {
      expect(toToolOutcome({ content: [{ type: "text", text: '{"b":2}' }] })).to.deep.equal({
        ok: true,
        output: { b: 2 },
      });
      expect(toToolOutcome({ content: [{ type: "text", text: "[1]" }] })).to.deep.equal({
        ok: true,
        output: { text: "[1]" },
      });
      expect(toToolOutcome({ content: [{ type: "image" }] })).to.deep.equal({ ok: true, output: { text: "" } });
    });
  });

  describe("listAllTools()", () => {
    it("follows cursors until a page has none, in order", async () => {
      const pages: Record<string, { tools: string[]; nextCursor?: string }> = {
        "": { tools: ["a", "b"], nextCursor: "p2" },
        p2: { tools: ["c"], nextCursor: "p3" },
        p3: { tools: ["d"] },
      };
      const asked: Array<string | undefined> = [];
      const tools = await listAllTools((cursor) => {
        asked.push(cursor);
        return Promise.resolve(pages[cursor ?? ""] as { tools: string[] });
      });
      expect(tools).to.deep.equal(["a", "b", "c", "d"]);
      expect(asked).to.deep.equal([undefined, "p2", "p3"]);
    });
    it("refuses a cursor that repeats and a listing that never ends", async () => {
      const looping = () => Promise.resolve({ tools: ["x"], nextCursor: "same" });
      const error: unknown = await listAllTools(looping).catch((caught: unknown) => caught);
      expect((error as Error).message).to.equal('tools/list repeated cursor "same"');
      let page = 0;
      const endless = () => Promise.resolve({ tools: [], nextCursor: String(page++) });
      const endlessError: unknown = await listAllTools(endless, { maxPages: 3 }).catch((caught: unknown) => caught);
      expect((endlessError as Error).message).to.equal("tools/list did not end within 3 pages");
    });
  });

  describe("superviseConnection()", () => {
    it("retries a server that is unreachable, reconnects after a close, and stops on abort", async () => {
      const stop = new AbortController();
      const log: string[] = [];
      let attempts = 0;
      let closeSecond: () => void = () => undefined;
      const done = superviseConnection({
        signal: stop.signal,
        backoff: { initialDelayMs: 1, maxDelayMs: 1 },
        connect: () => {
          attempts++;
          if (attempts === 1) return Promise.reject(new Error("refused"));
          if (attempts === 2) return Promise.resolve({ id: 2, closed: Promise.resolve() });
          return Promise.resolve({ id: attempts, closed: new Promise<void>((resolve) => (closeSecond = resolve)) });
        },
        onUp: (connection) => {
          log.push(`up ${connection.id}`);
          if (connection.id === 3) stop.abort();
        },
        onDown: (connection) => log.push(`down ${connection.id}`),
        onRetry: (error, _delayMs, attempt) => log.push(`retry ${attempt} ${(error as Error).message}`),
      });
      await done;
      closeSecond();
      // The second failure is the first of a new streak: a connection came up in between.
      expect(log).to.deep.equal([
        "retry 0 refused",
        "up 2",
        "down 2",
        "retry 0 the connection closed",
        "up 3",
        "down 3",
      ]);
      expect(attempts).to.equal(3);
    });
  });

  describe("createStderrTail()", () => {
    it("keeps the last lines within the line bound", () => {
      const tail = createStderrTail({ maxLines: 2, maxBytes: 100 });
      expect(tail.text()).to.equal("");
      for (const line of ["one", "two", "three"]) tail.push(line);
      expect(tail.text()).to.equal("two\nthree");
    });
    it("drops the oldest lines beyond the byte bound and keeps the end of a line too long alone", () => {
      const tail = createStderrTail({ maxLines: 10, maxBytes: 8 });
      for (const line of ["aaaa", "bbb", "cc"]) tail.push(line);
      expect(tail.text()).to.equal("bbb\ncc");
      tail.push("0123456789é");
      expect(tail.text()).to.equal("456789é");
    });
  });

  describe("summariseStartFailure()", () => {
    it("quotes the child's stderr on one line with its exit code, or says it wrote nothing", () => {
      const closed = new Error("Connection closed");
      const failed = new McpStartError({ exit: { code: 3, signal: null }, stderr: "first\nboom" }, closed);
      expect(failed.message).to.equal("Connection closed (exited with code 3)");
      expect(summariseStartFailure(failed)).to.deep.equal({
        text: 'exited with code 3; its stderr ends with "first\\nboom"',
        short: "exited with code 3",
        fields: { error: "Connection closed", exitCode: 3, stderr: "first\nboom" },
      });
      const killed = new McpStartError({ exit: { code: null, signal: "SIGKILL" }, stderr: "" }, closed);
      expect(summariseStartFailure(killed).text).to.equal("killed by SIGKILL; it wrote nothing to stderr");
      const neverRan = new McpStartError({ exit: undefined, stderr: "" }, new Error("spawn nope ENOENT"));
      expect(summariseStartFailure(neverRan).text).to.equal("spawn nope ENOENT");
      expect(summariseStartFailure(new Error("refused")).text).to.equal("refused");
    });
  });

  describe("reportConnectFailure()", () => {
    it("warns the first failure of a streak in full, then only attempts 1, 2, 4, 8, without stacks", () => {
      const records: { level: number; msg: string; err?: unknown }[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          records.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
          done();
        },
      });
      const log = pino({ level: "debug" }, sink);
      const server = { kind: "stdio", name: "bad", command: "node", args: [] } as const;
      const error = new McpStartError({ exit: { code: 3, signal: null }, stderr: "boom" }, new Error("closed"));
      for (let attempt = 0; attempt < 10; attempt++) reportConnectFailure(log, server, error, 100, attempt);
      const warnings = records.filter((record) => record.level === 40);
      expect(warnings.map((record) => record.msg)).to.deep.equal([
        'MCP server "bad" could not start: exited with code 3; its stderr ends with "boom"; trying again in 100 ms',
        'MCP server "bad" could not start after 2 attempts (exited with code 3); trying again in 100 ms',
        'MCP server "bad" could not start after 3 attempts (exited with code 3); trying again in 100 ms',
        'MCP server "bad" could not start after 5 attempts (exited with code 3); trying again in 100 ms',
        'MCP server "bad" could not start after 9 attempts (exited with code 3); trying again in 100 ms',
      ]);
      expect(warnings.some((record) => "err" in record)).to.equal(false);
      const debug = records.filter((record) => record.level === 20);
      expect(debug).to.have.length(10);
      expect(debug.every((record) => typeof (record.err as { stack?: unknown }).stack === "string")).to.equal(true);
    });
  });
});
