// The README's reference tables for tool authors (defineTool keys, ToolContext members, checkpoint
// hooks, createProvider options) against the interfaces they describe, read from the sources with
// the TypeScript compiler: a key added, renamed or removed in the code fails here until the README
// says so too.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import ts from "typescript";

/**
 * The members of interface `name` in `file`: `key` for a property, `key(a, b)` for a method, as the
 * README's first column writes them.
 */
function interfaceMembers(file: string, name: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const declaration = source.statements.find(
    (statement): statement is ts.InterfaceDeclaration =>
      ts.isInterfaceDeclaration(statement) && statement.name.text === name,
  );
  if (!declaration) throw new Error(`${file} declares no interface ${name}`);
  return declaration.members.map((member) => {
    const key = member.name?.getText(source) ?? "";
    if (!ts.isMethodSignature(member)) return key;
    return `${key}(${member.parameters.map((parameter) => parameter.name.getText(source)).join(", ")})`;
  });
}

/** The rows (cells, backticks kept) of the first table after the README heading `heading`. */
function readmeTable(heading: string): string[][] {
  const lines = readFileSync("README.md", "utf8").split("\n");
  let index = lines.indexOf(heading);
  if (index < 0) throw new Error(`README.md has no heading ${JSON.stringify(heading)}`);
  do index += 1;
  while (index < lines.length && !lines[index]?.startsWith("|") && !lines[index]?.startsWith("#"));
  const rows: string[][] = [];
  for (; lines[index]?.startsWith("|"); index += 1) {
    rows.push(
      (lines[index] ?? "")
        .slice(1, -1)
        .split("|")
        .map((cell) => cell.trim()),
    );
  }
  if (rows.length < 3) throw new Error(`README.md has no table under ${JSON.stringify(heading)}`);
  return rows.slice(2);
}

/** The first column of a README table, without its backticks. */
function readmeKeys(heading: string): string[] {
  return readmeTable(heading).map((row) => (row[0] ?? "").replaceAll("`", ""));
}

describe("The README's tables for tool authors", () => {
  it("list every defineTool key, and every capability flag in the capabilities row", () => {
    expect(readmeKeys("### `defineTool` keys")).to.have.members(
      interfaceMembers("src/tools/define-tool.ts", "ToolDefinitionInit"),
    );
    const capabilities = readmeTable("### `defineTool` keys").find((row) => row[0] === "`capabilities`");
    for (const flag of interfaceMembers("src/tools/define-tool.ts", "ToolCapabilityFlags")) {
      expect(capabilities?.join(" "), "the capabilities row").to.contain(`\`${flag}\``);
    }
  });

  it("list every ToolContext member, methods with their parameters", () => {
    expect(readmeKeys("### `ToolContext` members")).to.have.members(
      interfaceMembers("src/registry/tool-definition.ts", "ToolContext"),
    );
  });

  it("give the checkpoint hooks' signatures", () => {
    expect(readmeKeys("### Checkpoint hooks")).to.have.members(
      interfaceMembers("src/registry/tool-definition.ts", "CheckpointHooks"),
    );
  });

  it("list every createProvider option", () => {
    expect(readmeKeys("### `createProvider` options")).to.have.members(
      interfaceMembers("src/providers/create-provider.ts", "ProviderOptions"),
    );
  });
});
