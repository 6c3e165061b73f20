// Rewrites the options table of README.md from the option definitions in src/config.ts (built to
// dist/ first by `npm run docs:options`), formatted by prettier as `npm run format` would.
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import { optionsTable, replaceOptionsTable } from "../dist/src/options-table.js";

const path = new URL("../README.md", import.meta.url);
const readme = await readFile(path, "utf8");
const config = (await prettier.resolveConfig(fileURLToPath(path))) ?? {};
const updated = await prettier.format(replaceOptionsTable(readme, optionsTable()), {
  ...config,
  filepath: fileURLToPath(path),
});
if (updated === readme) {
  console.log("README.md: the options table is up to date");
} else {
  await writeFile(path, updated);
  console.log("README.md: options table regenerated");
}
