import { expect } from "chai";
import { readConfig } from "../../src/config.js";

describe("readConfig() › --cors-origin", () => {
  it("allows no origin by default", () => {
    expect(readConfig([], {}).corsOrigins).to.deep.equal([]);
  });

  it("takes the flag repeated, or a comma-separated TOOLRUNTIME_CORS_ORIGIN", () => {
    const flags = readConfig(["--cors-origin", "https://a.example", "--cors-origin", "http://127.0.0.1:3000"], {});
    expect(flags.corsOrigins).to.deep.equal(["https://a.example", "http://127.0.0.1:3000"]);
    const env = readConfig([], { TOOLRUNTIME_CORS_ORIGIN: "https://a.example,https://b.example:8443" });
    expect(env.corsOrigins).to.deep.equal(["https://a.example", "https://b.example:8443"]);
  });

  it("rejects a value that is not an origin, naming it", () => {
    for (const value of ["https://a.example/", "a.example", "*", "https://a.example/app", "ftp://a.example"]) {
      expect(() => readConfig(["--cors-origin", value], {}), value).to.throw(
        `--cors-origin "${value}" is invalid: use an origin, a scheme, host and optional port with no path or trailing slash, for example https://app.example.com or http://127.0.0.1:3000`,
      );
    }
  });
});
