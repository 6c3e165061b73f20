// Bundles the web console (console/src, TypeScript for the browser) into dist/console/ with esbuild:
// app.js (one ES module, minified), index.html and style.css. The server serves that folder at
// /console/ (src/server/console-assets.ts); nothing is fetched at run time. Type checking is tsc's
// (`tsc -p console`, run before this by `npm run build`): esbuild only strips types.
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = join(root, "dist", "console");
await mkdir(outDir, { recursive: true });
await build({
  entryPoints: [join(root, "console", "src", "main.ts")],
  outfile: join(outDir, "app.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
await copyFile(join(root, "console", "index.html"), join(outDir, "index.html"));
await copyFile(join(root, "console", "style.css"), join(outDir, "style.css"));
