import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Files and contents of a throwaway PKI: a CA, a server certificate for 127.0.0.1, client certificates. */
export interface TestPki {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly ca: Buffer;
  /** A client certificate and key signed by the CA, by common name. */
  client(commonName: string): Promise<{ cert: Buffer; key: Buffer }>;
  /** A self-signed client certificate and key the CA never signed. */
  stranger(commonName: string): Promise<{ cert: Buffer; key: Buffer }>;
}

/** Creates a fresh CA and server certificate with the openssl command (ECDSA P-256, one day). */
export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-pki-"));
  const file = (name: string): string => path.join(dir, name);
  const openssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  const newKey = (name: string) => openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file(name));
  await newKey("ca.key");
  await openssl(
    "req",
    "-x509",
    "-new",
    "-key",
    file("ca.key"),
    "-subj",
    "/CN=toolruntime test CA",
    "-days",
    "1",
    "-out",
    file("ca.pem"),
  );
  const issue = async (name: string, subject: string, extensions: string, issuer: "ca" | "self"): Promise<void> => {
    await newKey(`${name}.key`);
    await openssl("req", "-new", "-key", file(`${name}.key`), "-subj", subject, "-out", file(`${name}.csr`));
    await writeFile(file(`${name}.ext`), extensions);
    const signer =
      issuer === "ca"
        ? ["-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial"]
        : ["-signkey", file(`${name}.key`)];
    await openssl(
      "x509",
      "-req",
      "-in",
      file(`${name}.csr`),
      ...signer,
      "-days",
      "1",
      "-extfile",
      file(`${name}.ext`),
      "-out",
      file(`${name}.pem`),
    );
  };
  await issue(
    "server",
    "/CN=127.0.0.1",
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    "ca",
  );
  const clientOf = (issuer: "ca" | "self") => async (commonName: string) => {
    const name = `${issuer}-${commonName.replace(/[^a-z0-9]/gi, "_")}`;
    await issue(name, `/CN=${commonName}`, "extendedKeyUsage=clientAuth\n", issuer);
    return { cert: await readFile(file(`${name}.pem`)), key: await readFile(file(`${name}.key`)) };
  };
  return {
    dir,
    caFile: file("ca.pem"),
    serverCertFile: file("server.pem"),
    serverKeyFile: file("server.key"),
    ca: await readFile(file("ca.pem")),
    client: clientOf("ca"),
    stranger: clientOf("self"),
  };
}
