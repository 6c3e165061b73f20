import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** bench/results/ of the repository (git-ignored), from dist/bench/report/. */
export const resultsDir = fileURLToPath(new URL("../../../bench/results/", import.meta.url));

/**
 * Writes the report as `<name>.md` and `<name>.json` under bench/results/, and copies them to
 * `latest-<mode>.md` and `.json`. Returns the paths written.
 */
export async function writeResults(
  name: string,
  mode: string,
  markdown: string,
  data: unknown,
): Promise<{ markdown: string; json: string }> {
  await mkdir(resultsDir, { recursive: true });
  const json = `${JSON.stringify(data, null, 2)}\n`;
  const paths = { markdown: join(resultsDir, `${name}.md`), json: join(resultsDir, `${name}.json`) };
  await writeFile(paths.markdown, markdown);
  await writeFile(paths.json, json);
  await writeFile(join(resultsDir, `latest-${mode}.md`), markdown);
  await writeFile(join(resultsDir, `latest-${mode}.json`), json);
  return paths;
}
