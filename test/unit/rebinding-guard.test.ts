import { expect } from "chai";
import { readConfig } from "../../src/config.js";
import { createRebindingGuard } from "../../src/server/rebinding-guard.js";

describe("createRebindingGuard()", () => {
  const guard = createRebindingGuard({ allowedHosts: ["Tools.Internal"], corsOrigins: ["https://app.example.com"] });

  describe("refuseHost()", () => {
    it("serves localhost, IPv4 and IPv6 addresses and allowed hosts, with or without port, in any case", () => {
      for (const authority of [
        "localhost",
        "LOCALHOST:8080",
        "127.0.0.1:1",
        "10.0.0.7",
        "[::1]:8080",
        "[fd00::2]",
        "tools.internal:443",
      ]) {
        expect(guard.refuseHost(authority), authority).to.equal(undefined);
      }
    });

    it("refuses other names, naming the host without its port and the option that allows it", () => {
      expect(guard.refuseHost("Attacker.Example:8080")).to.equal(
        'host "attacker.example" is not served while authentication is off (DNS rebinding protection): call localhost, 127.0.0.1 or [::1], or allow the name with --allowed-host attacker.example',
      );
      for (const authority of [
        "localhost.attacker.example",
        "127.0.0.1.nip.io",
        "sub.tools.internal",
        "localhost.",
        "a@localhost",
      ]) {
        expect(guard.refuseHost(authority), authority).to.be.a("string");
      }
    });

    it("refuses a request that names no host", () => {
      expect(guard.refuseHost(undefined)).to.contain("names no host");
      expect(guard.refuseHost("")).to.contain("names no host");
    });
  });

  describe("refuseOrigin()", () => {
    it("serves the server's own origin and the CORS origins", () => {
      expect(guard.refuseOrigin("http://localhost:8080", "http", "LocalHost:8080")).to.equal(undefined);
      expect(guard.refuseOrigin("https://127.0.0.1", "https", "127.0.0.1:443")).to.equal(undefined);
      expect(guard.refuseOrigin("https://app.example.com", "http", "127.0.0.1:8080")).to.equal(undefined);
    });

    it("refuses another port, another scheme, an opaque origin and a foreign one, naming it", () => {
      for (const [origin, scheme] of [
        ["http://localhost:8081", "http"],
        ["https://localhost:8080", "http"],
        ["null", "http"],
        ["http://attacker.example", "http"],
      ] as const) {
        expect(guard.refuseOrigin(origin, scheme, "localhost:8080"), origin).to.equal(
          `origin "${origin}" may not call this server while authentication is off (DNS rebinding protection): serve the page from the server's own origin, or allow it with --cors-origin ${origin}`,
        );
      }
    });
  });
});

describe("readConfig() › --allowed-host", () => {
  it("allows no extra host by default, and takes the flag repeated or a comma-separated TOOLRUNTIME_ALLOWED_HOST", () => {
    expect(readConfig([], {}).allowedHosts).to.deep.equal([]);
    expect(readConfig(["--allowed-host", "a.internal", "--allowed-host", "b"], {}).allowedHosts).to.deep.equal([
      "a.internal",
      "b",
    ]);
    expect(readConfig([], { TOOLRUNTIME_ALLOWED_HOST: "a.internal,b.internal" }).allowedHosts).to.deep.equal([
      "a.internal",
      "b.internal",
    ]);
  });

  it("rejects a value that is not a host name, naming it", () => {
    for (const value of ["http://a.internal", "a.internal:8080", "*", "a..b", "a_b.internal"]) {
      expect(() => readConfig(["--allowed-host", value], {}), value).to.throw(
        `--allowed-host "${value}" is invalid: use a host name without scheme or port, for example toolruntime.internal`,
      );
    }
  });
});
