import { expect } from "chai";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { readConfig } from "../../src/config.js";

describe("readConfig() security options", () => {
  it("has no health port and no self-approval by default", () => {
    const config = readConfig([], {});
    expect([config.healthPort, config.allowSelfApproval]).to.deep.equal([undefined, false]);
  });

  it("reads --health-port and --allow-self-approval from flags and the environment", () => {
    const fromFlags = readConfig(["--health-port", "8081", "--allow-self-approval"], {});
    expect([fromFlags.healthPort, fromFlags.allowSelfApproval]).to.deep.equal([8081, true]);
    const fromEnv = readConfig([], { TOOLRUNTIME_HEALTH_PORT: "0", TOOLRUNTIME_ALLOW_SELF_APPROVAL: "true" });
    expect([fromEnv.healthPort, fromEnv.allowSelfApproval]).to.deep.equal([0, true]);
    expect(() => readConfig(["--health-port", "70000"], {})).to.throw(
      '--health-port "70000" is invalid: use a whole number from 0 to 65535',
    );
  });

  it("accepts grants of the ownership, registry and metrics actions in the config file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-config-"));
    const file = path.join(dir, "config.json");
    const grants = [
      { actions: ["executions.read_all", "executions.cancel_all", "metrics.read"], patterns: ["*"] },
      { actions: ["registries.create"], patterns: ["team"] },
    ];
    await writeFile(file, JSON.stringify({ healthPort: 9090, identities: [{ name: "ops", grants }] }));
    const config = readConfig(["--config", file], {});
    expect(config.healthPort).to.equal(9090);
    expect(config.identities[0]?.grants).to.deep.equal(grants);
  });
});
