import { X509Certificate } from "node:crypto";

/**
 * Throws an Error naming the file when the first certificate of the PEM chain `pem` is expired or
 * not yet valid at `now`, or cannot be parsed, so a server never starts with a certificate every
 * client would refuse.
 */
export function ensureCertificateValid(pem: Buffer, file: string, now: Date = new Date()): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (error) {
    throw new Error(
      `certificate file ${JSON.stringify(file)} holds no readable certificate: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  const validFrom = new Date(certificate.validFrom);
  const validTo = new Date(certificate.validTo);
  if (now.getTime() > validTo.getTime()) {
    throw new Error(
      `certificate file ${JSON.stringify(file)} expired on ${validTo.toISOString()}: renew the certificate`,
    );
  }
  if (now.getTime() < validFrom.getTime()) {
    throw new Error(
      `certificate file ${JSON.stringify(file)} is not valid until ${validFrom.toISOString()}: check the clock, or issue a certificate valid now`,
    );
  }
}
