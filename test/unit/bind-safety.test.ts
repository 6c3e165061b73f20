import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ensureSafeBind, isLoopback } from "../../src/server/bind-safety.js";
import { ensureCertificateValid } from "../../src/server/certificate-validity.js";

const run = promisify(execFile);

describe("isLoopback()", () => {
  it("accepts localhost, 127.0.0.0/8, ::1 and 127/8 mapped into IPv6 in any spelling", () => {
    for (const host of [
      "localhost",
      "127.0.0.1",
      "127.1.2.3",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "::FFFF:127.9.9.9",
      "::ffff:7f00:1",
      "[::ffff:127.0.0.1]",
    ]) {
      expect(isLoopback(host), host).to.equal(true);
    }
  });

  it("rejects every other address", () => {
    for (const host of [
      "0.0.0.0",
      "::",
      "10.0.0.1",
      "::ffff:10.0.0.1",
      "128.0.0.1",
      "example.com",
      "127.0.0.1.nip.io",
    ]) {
      expect(isLoopback(host), host).to.equal(false);
    }
  });
});

describe("ensureSafeBind()", () => {
  const base = { host: "0.0.0.0", tls: false, identities: 0, allowInsecureRemote: false };
  it("lets a remote bind through with TLS and identities, or when allowed", () => {
    expect(() => ensureSafeBind({ ...base, tls: true, identities: 1 })).to.not.throw();
    expect(() => ensureSafeBind({ ...base, allowInsecureRemote: true })).to.not.throw();
    expect(() => ensureSafeBind({ ...base, host: "::ffff:127.0.0.1" })).to.not.throw();
  });

  it("says which half is missing", () => {
    expect(() => ensureSafeBind(base)).to.throw('refusing to listen on "0.0.0.0" without TLS or authentication');
    expect(() => ensureSafeBind({ ...base, identities: 2 })).to.throw("bearer tokens would cross the network in clear");
    expect(() => ensureSafeBind({ ...base, tls: true })).to.throw("every caller would be an admin");
  });
});

describe("ensureCertificateValid()", () => {
  let pem: Buffer;
  before(async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-validity-"));
    const key = path.join(dir, "k.pem");
    const cert = path.join(dir, "c.pem");
    await run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
    await run("openssl", ["req", "-x509", "-new", "-key", key, "-subj", "/CN=validity", "-days", "1", "-out", cert]);
    pem = await readFile(cert);
  });
  const day = 86_400_000;

  it("accepts a certificate within its validity", () => {
    expect(() => ensureCertificateValid(pem, "c.pem")).to.not.throw();
  });

  it("refuses one past its notAfter and one before its notBefore, naming the file", () => {
    expect(() => ensureCertificateValid(pem, "c.pem", new Date(Date.now() + 2 * day))).to.throw(
      /^certificate file "c\.pem" expired on .+: renew the certificate$/,
    );
    expect(() => ensureCertificateValid(pem, "c.pem", new Date(Date.now() - day))).to.throw(
      /^certificate file "c\.pem" is not valid until .+: check the clock, or issue a certificate valid now$/,
    );
  });

  it("refuses a file without a certificate", () => {
    expect(() => ensureCertificateValid(Buffer.from("not a certificate"), "bad.pem")).to.throw(
      /^certificate file "bad\.pem" holds no readable certificate/,
    );
  });
});
