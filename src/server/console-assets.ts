import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { fileURLToPath } from "node:url";

/** Where the web console is served on the HTTP port. */
export const consolePath = "/console/";

/** One built file of the console, held in memory. */
interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
}

/** The files `npm run build` writes to dist/console/ (scripts/build-console.mjs), by URL path. */
const files: Readonly<Record<string, { file: string; contentType: string }>> = {
  "/console/": { file: "index.html", contentType: "text/html; charset=utf-8" },
  "/console/app.js": { file: "app.js", contentType: "text/javascript; charset=utf-8" },
  "/console/style.css": { file: "style.css", contentType: "text/css; charset=utf-8" },
};

/**
 * What a console page may do: its own scripts and styles, and calls to its own origin (the API);
 * no inline script, no other origin, no framing.
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

// dist/src/server/ → dist/console/
const defaultDirectory = fileURLToPath(new URL("../../console/", import.meta.url));
const cache = new Map<string, Promise<Asset | undefined>>();

function load(directory: string, path: string): Promise<Asset | undefined> {
  const key = `${directory}\u0000${path}`;
  let asset = cache.get(key);
  if (!asset) {
    const entry = files[path];
    asset = entry
      ? readFile(`${directory}${entry.file}`).then(
          (body) => ({
            body,
            contentType: entry.contentType,
            etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
          }),
          () => undefined,
        )
      : Promise.resolve(undefined);
    // A missing build is looked for again next time, so building while the server runs works.
    void asset.then((found) => found ?? cache.delete(key));
    cache.set(key, asset);
  }
  return asset;
}

/**
 * Serves the web console's static files under `/console/` (the page, its script and its styles, built
 * into dist/console/ by `npm run build`) and answers true; answers false for any other path, which
 * the caller then serves. `/console` redirects to `/console/`; other methods than GET and HEAD get
 * 405; an unknown file, or a console that was not built, 404. Files are read once and kept in memory,
 * sent with an ETag (304 when it matches), `no-cache` (revalidated, so a new build shows at once), a
 * strict Content-Security-Policy and `nosniff`.
 */
export function serveConsoleAsset(
  request: IncomingMessage | Http2ServerRequest,
  response: ServerResponse | Http2ServerResponse,
  directory: string = defaultDirectory,
): boolean {
  const url = request.url ?? "";
  // Every call of the HTTP port passes here: most are told apart without splitting their URL.
  if (!url.startsWith("/console")) return false;
  const path = url.split("?")[0] ?? "";
  if (path !== "/console" && !path.startsWith(consolePath)) return false;
  const reply = (status: number, headers: Record<string, string>, body?: Buffer | string): void => {
    response.writeHead(status, { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", ...headers });
    if (request.method === "HEAD" || body === undefined) response.end();
    else response.end(body);
  };
  if (request.method !== "GET" && request.method !== "HEAD") {
    reply(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }, "use GET\n");
    return true;
  }
  if (path === "/console") {
    reply(308, { location: consolePath, "content-type": "text/plain; charset=utf-8" }, `see ${consolePath}\n`);
    return true;
  }
  load(directory, path).then(
    (asset) => {
      if (!asset) {
        const known = files[path] !== undefined;
        reply(
          404,
          { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
          known ? "the console was not built: run npm run build\n" : "not found\n",
        );
        return;
      }
      const headers = {
        "content-type": asset.contentType,
        "cache-control": "no-cache",
        etag: asset.etag,
        "content-security-policy": contentSecurityPolicy,
      };
      if (request.headers["if-none-match"] === asset.etag) reply(304, headers);
      else reply(200, { ...headers, "content-length": String(asset.body.length) }, asset.body);
    },
    () => reply(500, { "content-type": "text/plain; charset=utf-8" }, "console unavailable\n"),
  );
  return true;
}
