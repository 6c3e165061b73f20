import { expect } from "chai";
import { readFile } from "node:fs/promises";
import * as prettier from "prettier";
import { helpText } from "../../src/config.js";
import { currentOptionsTable, optionsTable } from "../../src/options-table.js";

describe("The README's options table", () => {
  it("is the table generated from src/config.ts (run `npm run docs:options` when this fails)", async () => {
    const readme = await readFile("README.md", "utf8");
    const config = (await prettier.resolveConfig("README.md")) ?? {};
    const generated = await prettier.format(optionsTable(), { ...config, filepath: "README.md" });
    expect(currentOptionsTable(readme)).to.equal(generated.trim());
  });

  it("has a row for every flag that `--help` lists", async () => {
    const table = currentOptionsTable(await readFile("README.md", "utf8")) ?? "";
    const flags = [...helpText().matchAll(/^ {2}--([a-z-]+)/gm)].map((match) => match[1] ?? "");
    expect(flags).to.include.members(["grpc-port", "cors-origin", "max-concurrent-runs", "help"]);
    for (const flag of flags) expect(table, flag).to.contain(`| \`--${flag}\``);
  });
});
