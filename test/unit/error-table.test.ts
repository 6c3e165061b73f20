import { expect } from "chai";
import { readFile } from "node:fs/promises";
import { ErrorType } from "../../src/errors/tool-runtime-error.js";

/** The first column of the README's error table (the rows under "| error_type |" in "## Errors"). */
async function readmeErrorTypes(): Promise<string[]> {
  const readme = await readFile("README.md", "utf8");
  const section = readme.slice(readme.indexOf("\n## Errors\n"));
  const table = section.slice(section.indexOf("| error_type"));
  const rows = table
    .slice(0, table.search(/\n(?!\|)/))
    .split("\n")
    .slice(2);
  return rows.map((row) => {
    const match = /^\|\s*`([A-Za-z]+)`\s*\|/.exec(row);
    if (!match?.[1]) throw new Error(`README error table row without an error type: ${row}`);
    return match[1];
  });
}

describe("The README's error table", () => {
  it("lists every error type of the code, once, and nothing else", async () => {
    const documented = await readmeErrorTypes();
    expect(new Set(documented).size, "no error type is listed twice").to.equal(documented.length);
    expect([...documented].sort()).to.deep.equal(Object.values(ErrorType).sort());
  });
});
