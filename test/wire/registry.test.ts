import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

for (const stackName of clientStackNames) {
  describe(`RegistryService over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer();
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    const spec = (name: string, extra: Record<string, unknown> = {}) => ({
      name,
      description: "a test tool",
      toolType: "function",
      ...extra,
    });

    describe("RegisterTool", () => {
      it("registers a tool that GetTool then returns with version and has_handler filled in", async () => {
        const name = `${uniqueName("reg")}.tool`;
        const registered = await client.registry.registerTool({
          spec: spec(name, { inputSchema: { type: "object" } }),
        });
        expect(registered.replaced).to.equal(false);
        expect(registered.spec?.hasHandler).to.equal(false);
        expect((registered.spec?.version ?? 0n) > 0n).to.equal(true);
        const got = await client.registry.getTool({ name });
        expect(got.spec?.name).to.equal(name);
        expect(got.spec?.inputSchema).to.deep.equal({ type: "object" });
        expect(got.spec?.version).to.equal(registered.spec?.version);
      });

      it("rejects a duplicate name with ALREADY_EXISTS and keeps the first spec", async () => {
        const name = `${uniqueName("dup")}.tool`;
        await client.registry.registerTool({ spec: spec(name, { description: "first" }) });
        const error = await expectToolError(
          client.registry.registerTool({ spec: spec(name, { description: "second" }) }),
          Code.AlreadyExists,
          "RegistrationError",
          `tool "${name}" is already registered`,
        );
        expect(error.toolName).to.equal(name);
        expect((await client.registry.getTool({ name })).spec?.description).to.equal("first");
      });

      it("replaces a tool when asked to and says so", async () => {
        const name = `${uniqueName("rep")}.tool`;
        await client.registry.registerTool({ spec: spec(name, { description: "first" }) });
        const replaced = await client.registry.registerTool({
          spec: spec(name, { description: "second" }),
          replace: true,
        });
        expect(replaced.replaced).to.equal(true);
        expect((await client.registry.getTool({ name })).spec?.description).to.equal("second");
      });

      it("refuses to replace a tool served by an in-process handler with FAILED_PRECONDITION", async () => {
        await expectToolError(
          client.registry.registerTool({ spec: spec("builtin.echo"), replace: true }),
          Code.FailedPrecondition,
          "RegistrationError",
          "cannot be replaced",
        );
      });

      it("enforces the read_only rule: no writes, no checkpointable", async () => {
        const name = `${uniqueName("ro")}.tool`;
        await expectToolError(
          client.registry.registerTool({ spec: spec(name, { capabilities: { readOnly: true, writes: true } }) }),
          Code.InvalidArgument,
          "RegistrationError",
          "a read_only tool cannot be writes",
        );
        await expectToolError(
          client.registry.registerTool({
            spec: spec(name, { capabilities: { readOnly: true, checkpointable: true } }),
          }),
          Code.InvalidArgument,
          "RegistrationError",
          "a read_only tool cannot be checkpointable",
        );
        await expectToolError(client.registry.getTool({ name }), Code.NotFound, "NotFoundError");
      });

      const invalidNames: [string, string][] = [
        ["empty", ""],
        ["with a space", "Fs Read"],
        ["uppercase", "Fs.read"],
        ["with one segment", "echo"],
        ["__proto__", "__proto__"],
        ["__proto__ as a segment", "fs.__proto__"],
        ["with a tab", "fs.re\tad"],
        ["with a newline", "fs.read\n"],
        ["with a control character", "fs.re\u0000ad"],
        ["with a Cyrillic look-alike", "fs.r\u0435ad"],
        ["with an empty segment", "fs..read"],
        ["over 128 characters", `fs.${"a".repeat(126)}`],
        ["with nine segments", "a.b.c.d.e.f.g.h.i"],
      ];
      for (const [label, name] of invalidNames) {
        it(`rejects a name ${label} with INVALID_ARGUMENT`, async () => {
          await expectToolError(
            client.registry.registerTool({ spec: spec(name) }),
            Code.InvalidArgument,
            "RegistrationError",
            name === "" ? "tool name is empty" : "is invalid",
          );
        });
      }

      it("accepts names that are Object.prototype properties as ordinary names", async () => {
        const names = ["constructor.tostring", "hasownproperty.valueof", "prototype.constructor"];
        for (const name of names) await client.registry.registerTool({ spec: spec(name) });
        for (const name of names) expect((await client.registry.getTool({ name })).spec?.name).to.equal(name);
        await expectToolError(
          client.registry.getTool({ name: "constructor.constructor" }),
          Code.NotFound,
          "NotFoundError",
        );
      });

      it("rejects an input schema that is not a JSON Schema with INVALID_ARGUMENT", async () => {
        await expectToolError(
          client.registry.registerTool({
            spec: spec(`${uniqueName("schema")}.tool`, { inputSchema: { type: "nonsense" } }),
          }),
          Code.InvalidArgument,
          "RegistrationError",
          "input_schema",
        );
      });

      it("rejects a missing spec and a default timeout over one day", async () => {
        await expectToolError(
          client.registry.registerTool({}),
          Code.InvalidArgument,
          "RegistrationError",
          "spec is missing",
        );
        await expectToolError(
          client.registry.registerTool({ spec: spec(`${uniqueName("t")}.tool`, { defaultTimeoutMs: 86_400_001 }) }),
          Code.InvalidArgument,
          "RegistrationError",
          "default_timeout_ms",
        );
      });
    });

    describe("ListTools", () => {
      it("filters by namespace and tool_type and pages in name order without repeats", async () => {
        const namespace = uniqueName("list");
        const names = ["d", "a", "c", "b", "e"].map((letter) => `${namespace}.${letter}`);
        for (const name of names) await client.registry.registerTool({ spec: spec(name) });
        await client.registry.registerTool({ spec: spec(`${namespace}.sub.z`, { toolType: "http" }) });
        const seen: string[] = [];
        let pageToken = "";
        let pages = 0;
        do {
          const page = await client.registry.listTools({ namespace, pageSize: 2, pageToken });
          seen.push(...page.tools.map((tool) => tool.name));
          pageToken = page.nextPageToken;
          pages += 1;
        } while (pageToken !== "");
        expect(seen).to.deep.equal([...names.sort(), `${namespace}.sub.z`]);
        expect(pages).to.equal(3);
        // A token continues only the listing it came from, and only as it was written.
        const first = await client.registry.listTools({ namespace, pageSize: 2 });
        await expectToolError(
          client.registry.listTools({ namespace: uniqueName("other"), pageToken: first.nextPageToken }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "page_token is invalid for namespace",
        );
        await expectToolError(
          client.registry.listTools({ namespace, pageToken: `${first.nextPageToken}!!` }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "page_token is invalid",
        );
        const http = await client.registry.listTools({ namespace, toolType: "http" });
        expect(http.tools.map((tool) => tool.name)).to.deep.equal([`${namespace}.sub.z`]);
        const nested = await client.registry.listTools({ namespace: `${namespace}.sub` });
        expect(nested.tools.map((tool) => tool.name)).to.deep.equal([`${namespace}.sub.z`]);
      });

      it("rejects a forged page token, an oversized page and a bad namespace with INVALID_ARGUMENT", async () => {
        await expectToolError(
          client.registry.listTools({ pageToken: "bm9wZQ" }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "page_token",
        );
        await expectToolError(
          client.registry.listTools({ pageSize: 1001 }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "page_size",
        );
        await expectToolError(
          client.registry.listTools({ namespace: "Bad NS" }),
          Code.InvalidArgument,
          "InvalidRequestError",
          "namespace",
        );
      });

      it("answers NOT_FOUND for a registry that does not exist", async () => {
        await expectToolError(
          client.registry.listTools({ registry: "nowhere" }),
          Code.NotFound,
          "NotFoundError",
          '"nowhere"',
        );
      });
    });

    describe("RemoveTool", () => {
      it("says whether it removed something", async () => {
        const name = `${uniqueName("rm")}.tool`;
        await client.registry.registerTool({ spec: spec(name) });
        expect((await client.registry.removeTool({ name })).removed).to.equal(true);
        expect((await client.registry.removeTool({ name })).removed).to.equal(false);
        await expectToolError(client.registry.getTool({ name }), Code.NotFound, "NotFoundError");
      });
    });

    describe("WatchTools", () => {
      it("sends the snapshot, then additions, updates and removals, and resumes from a version", async () => {
        const name = `${uniqueName("watch")}.tool`;
        const abort = new AbortController();
        const stream = client.registry.watchTools({}, { signal: abort.signal });
        const iterator = stream[Symbol.asyncIterator]();
        let snapshotVersion: bigint;
        for (;;) {
          const next = await iterator.next();
          if (next.done) throw new Error("stream ended during the snapshot");
          if (next.value.type === ToolChangeType.SNAPSHOT_END) {
            snapshotVersion = next.value.version;
            break;
          }
          expect(next.value.type).to.equal(ToolChangeType.SNAPSHOT);
        }
        await client.registry.registerTool({ spec: spec(name) });
        await client.registry.registerTool({ spec: spec(name, { description: "v2" }), replace: true });
        await client.registry.removeTool({ name });
        const live = [];
        while (live.length < 3) {
          const next = await iterator.next();
          if (next.done) throw new Error("stream ended early");
          if (next.value.spec?.name === name) live.push(next.value);
        }
        abort.abort();
        await iterator.return?.();
        expect(live.map((change) => change.type)).to.deep.equal([
          ToolChangeType.ADDED,
          ToolChangeType.UPDATED,
          ToolChangeType.REMOVED,
        ]);
        expect(live[1]?.spec?.description).to.equal("v2");
        expect(live[0]!.version < live[1]!.version && live[1]!.version < live[2]!.version).to.equal(true);

        // Resuming from the snapshot's version replays the same three changes.
        const resumed = [];
        const resumeAbort = new AbortController();
        for await (const change of client.registry.watchTools(
          { fromVersion: snapshotVersion },
          { signal: resumeAbort.signal },
        )) {
          if (change.spec?.name === name) resumed.push(change);
          if (change.version === live[2]!.version) break;
        }
        resumeAbort.abort();
        expect(resumed.map((change) => [change.type, change.version])).to.deep.equal(
          live.map((change) => [change.type, change.version]),
        );
      });

      it("rejects a version from the future with INVALID_ARGUMENT before any message", async () => {
        const iterator = client.registry.watchTools({ fromVersion: 1n << 60n })[Symbol.asyncIterator]();
        await expectToolError(iterator.next(), Code.InvalidArgument, "InvalidRequestError", "from_version");
      });
    });
  });
}
