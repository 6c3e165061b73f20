import { execFileSync } from "node:child_process";

function h2loadVersion(): string | undefined {
  try {
    return execFileSync("h2load", ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Returns h2load's version, installing Debian's nghttp2-client first when h2load is missing
 * (this needs root: apt-get update, then apt-get install). Throws when it cannot be had.
 */
export function ensureH2load(log: (line: string) => void): string {
  const present = h2loadVersion();
  if (present) return present;
  if (process.getuid?.() !== 0) {
    throw new Error("h2load is missing: install it with `sudo apt-get install nghttp2-client`, then run again");
  }
  log("h2load is missing: installing nghttp2-client with apt-get");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  execFileSync("apt-get", ["install", "-y", "-qq", "nghttp2-client"], { stdio: "inherit", env });
  const installed = h2loadVersion();
  if (!installed) throw new Error("h2load is still missing after installing nghttp2-client");
  return installed;
}
