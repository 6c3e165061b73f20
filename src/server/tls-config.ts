import { readFileSync } from "node:fs";
import { ensureCertificateValid } from "./certificate-validity.js";

/** Certificate files for TLS on both ports. */
export interface TlsFiles {
  /** PEM certificate chain of the server. */
  readonly certFile: string;
  /** PEM private key of the server. */
  readonly keyFile: string;
  /**
   * PEM CA bundle that client certificates must chain to. When given, mutual TLS is required on
   * both ports: a client without a certificate issued by this CA cannot connect.
   */
  readonly clientCaFile?: string | undefined;
}

/** The contents of {@link TlsFiles}, read once at start. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly clientCa: Buffer | undefined;
}

/**
 * Reads the certificate files; throws an Error naming the file that cannot be read, or the
 * certificate file when its certificate is expired or not yet valid.
 */
export function readTlsFiles(files: TlsFiles): TlsMaterial {
  const read = (path: string, what: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new Error(`${what} ${JSON.stringify(path)} cannot be read: ${(error as Error).message}`, { cause: error });
    }
  };
  const clientCa = files.clientCaFile === undefined ? undefined : read(files.clientCaFile, "client CA file");
  const cert = read(files.certFile, "certificate file");
  ensureCertificateValid(cert, files.certFile);
  return {
    cert,
    key: read(files.keyFile, "key file"),
    clientCa,
  };
}
