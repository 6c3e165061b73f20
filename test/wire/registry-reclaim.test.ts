import { Code } from "@connectrpc/connect";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const as = (name: string) => ({ headers: { authorization: `Bearer ${name}-token` } });

for (const stackName of clientStackNames) {
  describe(`Registry reclaim over ${stackName}`, () => {
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

    it("creates registries again after 63 were created and emptied, and a resuming watcher continues", async () => {
      const register = (registry: string, name: string) => client.registry.registerTool({ registry, spec: { name } });
      await register("first", "ns.tool");
      await client.registry.removeTool({ registry: "first", name: "ns.tool" });
      const { registryVersion } = await client.registry.listTools({ registry: "first" });
      expect(registryVersion).to.equal(2n);
      for (let index = 0; index < 62; index++) {
        await register(`r${index}`, "ns.tool");
        await client.registry.removeTool({ registry: `r${index}`, name: "ns.tool" });
      }
      // The set is full of empty registries: the next one reclaims them, "first" included.
      await register("after", "ns.tool");
      await expectToolError(
        client.registry.listTools({ registry: "first" }),
        Code.NotFound,
        "NotFoundError",
        'registry "first" does not exist',
      );
      // A watcher that last saw version 2 of "first" resumes and sees what comes next, numbered after it.
      const abort = new AbortController();
      const stream = client.registry.watchTools(
        { registry: "first", fromVersion: registryVersion },
        { signal: abort.signal },
      );
      const iterator = stream[Symbol.asyncIterator]();
      const next = iterator.next();
      // The watch is subscribed before its first message: registering then reaches it.
      await waitForSubscriber(server, "first");
      await register("first", "ns.back");
      const change = await next;
      abort.abort();
      if (change.done === true) throw new Error("the watch ended without a change");
      expect([change.value.type, change.value.spec?.name, change.value.version]).to.deep.equal([
        ToolChangeType.ADDED,
        "ns.back",
        3n,
      ]);
    });
  });
}

/** Resolves once registry `name` of the server has a subscriber, polling the event loop a bounded number of times. */
async function waitForSubscriber(server: RunningServer, name: string): Promise<void> {
  for (let turn = 0; turn < 10_000; turn++) {
    if ((server.runtime.registries.find(name)?.subscriberCount ?? 0) > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`registry "${name}" never got a subscriber`);
}

const identities: IdentityConfig[] = [
  {
    name: "builder",
    tokenSha256: [sha256("builder-token")],
    grants: [{ actions: ["read", "register"], patterns: ["team.*"] }],
  },
  {
    name: "creator",
    tokenSha256: [sha256("creator-token")],
    grants: [
      { actions: ["read", "register"], patterns: ["team.*"] },
      { actions: ["registries.create"], patterns: ["team"] },
    ],
  },
];

for (const stackName of ["grpc-js", "connect-json-http1"] as const) {
  describe(`Registry creation permission over ${stackName}`, () => {
    let server: RunningServer;
    let client: ClientStack;

    before(async () => {
      server = await startTestServer({ identities });
      client = createClientStack(stackName, server);
    });
    after(async () => {
      client.close();
      await server.close(0);
    });

    it("refuses to create a registry without registries.create on its name", async () => {
      await expectToolError(
        client.registry.registerTool({ registry: "team", spec: { name: "team.tool" } }, as("builder")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        'identity "builder" may not create registry "team": grant it "registries.create" on a pattern matching the registry name, or register in an existing registry',
      );
      await expectToolError(
        client.registry.registerTool({ registry: "other", spec: { name: "team.tool" } }, as("creator")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        'may not create registry "other"',
      );
      expect(server.runtime.registries.find("team")).to.equal(undefined);
    });

    it("creates it with the permission, after which registering there needs only register", async () => {
      await client.registry.registerTool({ registry: "team", spec: { name: "team.first" } }, as("creator"));
      await client.registry.registerTool({ registry: "team", spec: { name: "team.second" } }, as("builder"));
      const { tools } = await client.registry.listTools({ registry: "team" }, as("builder"));
      expect(tools.map((tool) => tool.name)).to.deep.equal(["team.first", "team.second"]);
    });
  });
}
