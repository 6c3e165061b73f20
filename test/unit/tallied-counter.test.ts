import { expect } from "chai";
import { Registry } from "prom-client";
import { TalliedCounter } from "../../src/telemetry/tallied-counter.js";

describe("TalliedCounter", () => {
  it("shows every count at each scrape, once, by label set", async () => {
    const registry = new Registry();
    const tallied = new TalliedCounter({
      name: "test_calls_total",
      help: "Calls.",
      labelNames: ["method", "code"],
      registers: [registry],
    });
    const ok = tallied.series({ method: "Get", code: "OK" });
    expect(tallied.series({ method: "Get", code: "OK" })).to.equal(ok);
    const failed = tallied.series({ method: "Get", code: "NOT_FOUND" });
    for (let i = 0; i < 3; i++) ok.inc();
    failed.inc();
    const first = await registry.metrics();
    expect(first).to.contain('test_calls_total{method="Get",code="OK"} 3');
    expect(first).to.contain('test_calls_total{method="Get",code="NOT_FOUND"} 1');
    // A scrape hands the tallies over: the next shows the same totals plus what came since.
    expect(await registry.metrics()).to.contain('test_calls_total{method="Get",code="OK"} 3');
    ok.inc();
    expect(await registry.metrics()).to.contain('test_calls_total{method="Get",code="OK"} 4');
  });
});
