import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

/** Debian's chromium, as scripts/ensure-test-deps.mjs and .ci/run install it; nothing is downloaded. */
export const chromiumPath = "/usr/bin/chromium";

const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-quic",
  "--disable-sync",
];

/** Where browser tests write their screenshots: git-ignored, kept after the run for people to look at. */
export const screenshotDir = join(process.cwd(), ".test-work", "screenshots");

/** A headless Chromium with a fresh profile; `close` removes the profile. */
export async function launchChromium(): Promise<{ browser: BrowserContext; close: () => Promise<void> }> {
  const userDataDir = await mkdtemp(join(tmpdir(), "toolruntime-chromium-"));
  await mkdir(screenshotDir, { recursive: true });
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    args: chromiumArgs,
    headless: true,
    viewport: { width: 1100, height: 800 },
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
