import { expect } from "chai";
import { readFile } from "node:fs/promises";
import { serverNodeFlags } from "../../src/server-node-flags.js";

describe("The Node.js flags the server ships with", () => {
  it("are what `npm start` passes to node", async () => {
    const manifest = JSON.parse(await readFile("package.json", "utf8")) as { scripts: Record<string, string> };
    expect(manifest.scripts["start"]).to.equal(["node", ...serverNodeFlags, "dist/src/main.js"].join(" "));
  });

  it("are what the toolruntime executable's first line passes to node (env -S splits them)", async () => {
    const [firstLine] = (await readFile("dist/src/cli/bin.js", "utf8")).split("\n");
    expect(firstLine).to.equal(["#!/usr/bin/env -S node", ...serverNodeFlags].join(" "));
  });
});
