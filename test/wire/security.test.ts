import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { createHash } from "node:crypto";
import tls from "node:tls";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import { startServer, type RunningServer } from "../../src/server/tool-runtime-server.js";
import { createTestPki, type TestPki } from "../support/certificates.js";
import { clientStackNames, createClientStack, type ClientStack } from "../support/client-stacks.js";
import { expectToolError, uniqueName } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

const identities: IdentityConfig[] = [
  { name: "reader", tokenSha256: [sha256("reader-token")], grants: [{ actions: ["read"], patterns: ["*"] }] },
  {
    name: "builder",
    tokenSha256: [sha256("builder-token")],
    grants: [
      { actions: ["read", "execute"], patterns: ["builtin.*", "test.*"] },
      { actions: ["register"], patterns: ["team.*"] },
    ],
  },
  { name: "admin", tokenSha256: [sha256("admin-token")], grants: [{ actions: ["admin"], patterns: ["*"] }] },
  { name: "alice", certificateNames: ["alice"], grants: [{ actions: ["read"], patterns: ["builtin.*"] }] },
];

for (const stackName of clientStackNames) {
  describe(`Authentication and authorisation over ${stackName}`, () => {
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

    it("answers UNAUTHENTICATED with a ToolError to a call without credentials", async () => {
      await expectToolError(
        client.registry.getTool({ name: "builtin.echo" }),
        Code.Unauthenticated,
        "UnauthenticatedError",
        "carries no credentials",
      );
    });

    it("answers UNAUTHENTICATED to an unknown token and to a malformed header", async () => {
      await expectToolError(
        client.registry.getTool({ name: "builtin.echo" }, bearer("guess")),
        Code.Unauthenticated,
        "UnauthenticatedError",
        "not recognised",
      );
      await expectToolError(
        client.registry.getTool({ name: "builtin.echo" }, { headers: { authorization: "Basic abc" } }),
        Code.Unauthenticated,
        "UnauthenticatedError",
        "malformed",
      );
    });

    it("answers PERMISSION_DENIED with a ToolError when the identity lacks the permission", async () => {
      expect((await client.registry.getTool({ name: "builtin.echo" }, bearer("reader-token"))).spec?.name).to.equal(
        "builtin.echo",
      );
      const denied = await expectToolError(
        client.runner.activateTool({ toolName: "builtin.echo" }, bearer("reader-token")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        'identity "reader" may not execute tool "builtin.echo"',
      );
      expect(denied.toolName).to.equal("builtin.echo");
      await expectToolError(
        client.registry.registerTool({ spec: { name: "other.tool" } }, bearer("builder-token")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        "may not register",
      );
    });

    it("lets each identity do what its grants allow", async () => {
      const runner = uniqueName("r");
      await client.runner.activateTool({ runner, toolName: "builtin.echo" }, bearer("builder-token"));
      const { result } = await client.runner.executeTool(
        { runner, toolName: "builtin.echo", inputs: { a: 1 } },
        bearer("builder-token"),
      );
      expect(result?.success).to.equal(true);
      const name = `team.${uniqueName("t")}`;
      await client.registry.registerTool({ spec: { name } }, bearer("builder-token"));
      expect((await client.registry.removeTool({ name }, bearer("builder-token"))).removed).to.equal(true);
    });

    it("shows in listings and discovery only the tools the caller may read", async () => {
      const secret = `secret.${uniqueName("s")}`;
      await client.registry.registerTool({ spec: { name: secret } }, bearer("admin-token"));
      const builderView = await client.registry.listTools({ pageSize: 1000 }, bearer("builder-token"));
      const names = builderView.tools.map((tool) => tool.name);
      expect(names).to.include("builtin.echo");
      expect(names).to.not.include(secret);
      expect(names.every((name) => name.startsWith("builtin.") || name.startsWith("test."))).to.equal(true);
      const discovered = await client.runner.discoverTools({ pageSize: 1000 }, bearer("builder-token"));
      expect(discovered.tools.map((tool) => tool.name)).to.not.include(secret);
      const readerView = await client.registry.listTools({ pageSize: 1000 }, bearer("reader-token"));
      expect(readerView.tools.map((tool) => tool.name)).to.include(secret);
    });

    it("requires execute_unsafe for a tool flagged unsafe", async () => {
      const runner = uniqueName("r");
      await expectToolError(
        client.runner.activateTool({ runner, toolName: "test.unsafe" }, bearer("builder-token")),
        Code.PermissionDenied,
        "PermissionDeniedError",
        "may not execute unsafe",
      );
      await client.runner.activateTool({ runner, toolName: "test.unsafe" }, bearer("admin-token"));
      const { result } = await client.runner.executeTool(
        { runner, toolName: "test.unsafe", options: { acknowledgeUnsafe: true } },
        bearer("admin-token"),
      );
      expect(result?.success).to.equal(true);
    });
  });
}

describe("Listening beyond loopback", () => {
  it("is refused without TLS or identities, with a message that says why", async () => {
    let failure: unknown;
    try {
      await startServer({ host: "0.0.0.0", grpcPort: 0, httpPort: 0 });
    } catch (error) {
      failure = error;
    }
    expect(String(failure)).to.contain('refusing to listen on "0.0.0.0" without TLS or authentication');
  });
});

describe("TLS and mutual TLS", () => {
  let pki: TestPki;

  before(async () => {
    pki = await createTestPki();
  });

  describe("with a server certificate", () => {
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({ tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile } });
    });
    after(async () => {
      await server.close(0);
    });

    for (const stackName of clientStackNames) {
      it(`serves ${stackName} over TLS`, async () => {
        const client = createClientStack(stackName, server, { ca: pki.ca });
        try {
          expect((await client.registry.getTool({ name: "builtin.echo" })).spec?.name).to.equal("builtin.echo");
        } finally {
          client.close();
        }
      });
    }

    it("offers h2 and http/1.1 by ALPN on the HTTP port", async () => {
      const port = Number(new URL(server.httpUrl).port);
      const negotiate = (protocol: string) =>
        new Promise<string | false>((resolve, reject) => {
          const socket = tls.connect({ host: "127.0.0.1", port, ca: pki.ca, ALPNProtocols: [protocol] }, () => {
            resolve(socket.alpnProtocol ?? false);
            socket.end();
          });
          socket.once("error", reject);
        });
      expect(await negotiate("h2")).to.equal("h2");
      expect(await negotiate("http/1.1")).to.equal("http/1.1");
    });
  });

  describe("with a client CA (mutual TLS)", () => {
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({
        tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile, clientCaFile: pki.caFile },
        identities,
      });
    });
    after(async () => {
      await server.close(0);
    });

    for (const stackName of clientStackNames) {
      it(`takes the identity from the client certificate over ${stackName}`, async () => {
        const alice = await pki.client("alice");
        const client = createClientStack(stackName, server, { ca: pki.ca, ...alice });
        try {
          expect((await client.registry.getTool({ name: "builtin.echo" })).spec?.name).to.equal("builtin.echo");
          await expectToolError(
            client.runner.activateTool({ toolName: "builtin.echo" }),
            Code.PermissionDenied,
            "PermissionDeniedError",
            'identity "alice"',
          );
        } finally {
          client.close();
        }
      });

      it(`refuses a certificate the CA did not sign over ${stackName}`, async () => {
        const mallory = await pki.stranger("alice");
        const client = createClientStack(stackName, server, { ca: pki.ca, ...mallory });
        let failure: unknown;
        try {
          await client.registry.getTool({ name: "builtin.echo" });
        } catch (error) {
          failure = error;
        } finally {
          client.close();
        }
        expect(failure, "the handshake should fail").to.be.instanceOf(ConnectError);
        expect([Code.Unavailable, Code.Unknown, Code.Internal, Code.Aborted, Code.Canceled]).to.include(
          ConnectError.from(failure).code,
        );
      });
    }
  });
});
