import { expect } from "chai";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import type { IdentityConfig } from "../../src/auth/authenticator.js";
import { startServer, type RunningServer } from "../../src/server/tool-runtime-server.js";
import { createTestPki, type TestPki } from "../support/certificates.js";
import { createClientStack } from "../support/client-stacks.js";
import { startTestServer } from "../support/test-server.js";

const run = promisify(execFile);
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const identities: IdentityConfig[] = [
  { name: "ops", certificateNames: ["ops"], grants: [{ actions: ["admin"], patterns: ["*"] }] },
  { name: "ci", tokenSha256: [sha256("ci-token")], grants: [{ actions: ["read"], patterns: ["*"] }] },
];

/** The Error that `start` rejects with, or undefined when it starts (the server is then closed). */
async function startFailure(start: () => Promise<RunningServer>): Promise<Error | undefined> {
  try {
    const server = await start();
    await server.close(0);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

describe("Transport security at startup", () => {
  let pki: TestPki;
  before(async () => {
    pki = await createTestPki();
  });
  const tls = () => ({ certFile: pki.serverCertFile, keyFile: pki.serverKeyFile });
  const remote = { host: "0.0.0.0", grpcPort: 0, httpPort: 0 } as const;

  it("refuses a non-loopback bind with identities but no TLS, saying tokens would cross in clear", async () => {
    const failure = await startFailure(() => startServer({ ...remote, identities }));
    expect(failure?.message).to.equal(
      'refusing to listen on "0.0.0.0" with identities but without TLS: bearer tokens would cross the network in clear; configure --tls-cert and --tls-key, or pass --allow-insecure-remote (allowInsecureRemote) to accept the risk',
    );
  });

  it("refuses a non-loopback bind with TLS but no identities, saying everyone would be an admin", async () => {
    const failure = await startFailure(() => startServer({ ...remote, tls: tls() }));
    expect(failure?.message).to.equal(
      'refusing to listen on "0.0.0.0" with TLS but without identities: every caller would be an admin; configure identities in the config file, or pass --allow-insecure-remote (allowInsecureRemote) to accept the risk',
    );
  });

  it("counts ::ffff:127.0.0.1 as loopback and starts there without TLS or identities", async () => {
    const server = await startTestServer({ host: "::ffff:127.0.0.1" });
    try {
      expect(server.httpUrl).to.match(/^http:\/\/\[::ffff:127\.0\.0\.1\]:\d+$/);
      const health = await fetch(`${server.httpUrl}/healthz`);
      expect(health.status).to.equal(200);
    } finally {
      await server.close(0);
    }
  });

  it("refuses to start with an expired server certificate, naming the file", async () => {
    const keyFile = path.join(pki.dir, "expired.key");
    const certFile = path.join(pki.dir, "expired.pem");
    await run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", keyFile]);
    await run("openssl", ["req", "-new", "-key", keyFile, "-subj", "/CN=127.0.0.1", "-out", `${certFile}.csr`]);
    // A negative validity makes a certificate whose notAfter is a day before its notBefore: expired now.
    await run("openssl", [
      "x509",
      "-req",
      "-in",
      `${certFile}.csr`,
      "-signkey",
      keyFile,
      "-days",
      "-1",
      "-out",
      certFile,
    ]);
    const failure = await startFailure(() => startTestServer({ tls: { certFile, keyFile } }));
    expect(failure?.message).to.match(
      new RegExp(
        `^certificate file ${JSON.stringify(certFile)} expired on \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z: renew the certificate$`,
      ),
    );
  });
});

describe("A plain health port under mutual TLS", () => {
  let pki: TestPki;
  let server: RunningServer;
  before(async () => {
    pki = await createTestPki();
    server = await startTestServer({
      tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile, clientCaFile: pki.caFile },
      identities,
      healthPort: 0,
    });
  });
  after(async () => {
    await server.close(0);
  });

  it("answers /healthz and /readyz in cleartext to a probe without a client certificate", async () => {
    expect(server.healthUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    const live = await fetch(`${server.healthUrl}/healthz`);
    expect([live.status, await live.text()]).to.deep.equal([200, "ok\n"]);
    const ready = await fetch(`${server.healthUrl}/readyz`);
    expect([ready.status, await ready.text()]).to.deep.equal([200, "ready\n"]);
  });

  it("serves nothing else: no metrics, no RPC", async () => {
    const metrics = await fetch(`${server.healthUrl}/metrics`);
    expect(metrics.status).to.equal(404);
    await metrics.text();
    const rpc = await fetch(`${server.healthUrl}/toolruntime.v1.RegistryService/ListTools`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(rpc.status).to.equal(404);
    await rpc.text();
  });

  it("still requires a client certificate on the TLS ports", async () => {
    const ops = await pki.client("ops");
    const client = createClientStack("connect-json-http1", server, { ca: pki.ca, ...ops });
    try {
      const { tools } = await client.registry.listTools({});
      expect(tools.length).to.be.greaterThan(0);
    } finally {
      client.close();
    }
    const anonymous = createClientStack("connect-json-http1", server, { ca: pki.ca });
    let failure: unknown;
    try {
      await anonymous.registry.listTools({});
    } catch (error) {
      failure = error;
    } finally {
      anonymous.close();
    }
    expect(failure, "a call without a client certificate fails its handshake").to.be.instanceOf(Error);
  });

  it("is off unless asked for", async () => {
    const plain = await startTestServer();
    try {
      expect(plain.healthUrl).to.equal(undefined);
    } finally {
      await plain.close(0);
    }
  });
});
