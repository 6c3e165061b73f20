import { expect } from "chai";
import { isToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { ToolRunner } from "../../src/runner/tool-runner.js";
import { createToolRuntime } from "../../src/runtime.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";

describe("ToolRunner activation", () => {
  const runtime = createToolRuntime({ tools: builtinTools });
  after(() => runtime.close());

  it("keeps any number of active tools, one alone included, and deactivates each once", () => {
    const runner = new ToolRunner("counted", runtime.registries.default, { maxActiveTools: 10 });
    expect(runner.activeCount).to.equal(0);
    expect(runner.activate("builtin.echo").alreadyActive).to.equal(false);
    expect(runner.activate("builtin.echo").alreadyActive).to.equal(true);
    expect([runner.activeCount, runner.isActive("builtin.echo"), runner.isActive("builtin.noop")]).to.deep.equal([
      1,
      true,
      false,
    ]);
    runner.activate("builtin.noop");
    runner.activate("builtin.sleep");
    expect(runner.activeCount).to.equal(3);
    expect(runner.deactivate("builtin.noop")).to.equal(true);
    expect(runner.deactivate("builtin.noop")).to.equal(false);
    expect([runner.isActive("builtin.echo"), runner.isActive("builtin.sleep"), runner.activeCount]).to.deep.equal([
      true,
      true,
      2,
    ]);
    const single = new ToolRunner("single", runtime.registries.default);
    single.activate("builtin.echo");
    expect(single.deactivate("builtin.noop")).to.equal(false);
    expect(single.deactivate("builtin.echo")).to.equal(true);
    expect([single.activeCount, single.isActive("builtin.echo")]).to.deep.equal([0, false]);
  });

  it("refuses an activation past its maximum with RESOURCE_EXHAUSTED, and takes one again once room is made", () => {
    const runner = new ToolRunner("bounded", runtime.registries.default, { maxActiveTools: 2 });
    runner.activate("builtin.echo");
    runner.activate("builtin.noop");
    let refused: unknown;
    try {
      runner.activate("builtin.sleep");
    } catch (error) {
      refused = error;
    }
    expect(isToolRuntimeError(refused) && refused.code).to.equal("RESOURCE_EXHAUSTED");
    // An active tool activated again takes no more room.
    expect(runner.activate("builtin.echo").alreadyActive).to.equal(true);
    runner.deactivate("builtin.echo");
    expect(runner.activate("builtin.sleep").alreadyActive).to.equal(false);
  });
});
