// Makes sure what the test suite needs beyond npm is present: Debian's python3-grpcio and
// python3-grpc-tools for the Python client tests, pip, setuptools and venv for the test that
// installs the Python provider library, Debian's chromium for the browser tests (driven by
// playwright-core, which downloads no browser), and Debian's postgresql for the tests that start their
// own private PostgreSQL server (test/support/postgres-server.ts; never the system's on port 5432,
// which installing the package may start). Installs what is missing with apt-get when running as
// root; otherwise names the missing packages and exits non-zero.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";

const python = "/usr/bin/python3";
const chromium = "/usr/bin/chromium";
const postgresRoot = "/usr/lib/postgresql";

const needs = [
  {
    packages: ["python3-grpcio", "python3-grpc-tools", "python3-pip", "python3-setuptools", "python3-venv"],
    why: `the Python client and package tests need ${python} with them`,
    // setuptools first: imported after pip, its distutils shim fails an assertion.
    present: () =>
      spawnSync(python, ["-c", "import setuptools, grpc, grpc_tools.protoc, pip, venv"], { stdio: "ignore" }).status ===
      0,
  },
  {
    packages: ["chromium"],
    why: `the browser tests need ${chromium}`,
    present: () => existsSync(chromium),
  },
  {
    packages: ["postgresql"],
    why: `the tests start a private PostgreSQL server with ${postgresRoot}/<major>/bin/initdb and pg_ctl`,
    present: () =>
      existsSync(postgresRoot) &&
      readdirSync(postgresRoot).some((major) => existsSync(`${postgresRoot}/${major}/bin/initdb`)),
  },
];

const missing = needs.filter((need) => !need.present());
if (missing.length > 0) {
  const packages = missing.flatMap((need) => need.packages);
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const hasAptGet = spawnSync("sh", ["-c", "command -v apt-get"], { stdio: "ignore" }).status === 0;
  if (isRoot && hasAptGet) {
    console.log(`installing ${packages.join(" ")} for the tests...`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
    execFileSync("apt-get", ["install", "-y", "-qq", ...packages], { stdio: "inherit", env });
  }
  const stillMissing = missing.filter((need) => !need.present());
  if (stillMissing.length > 0) {
    for (const need of stillMissing) console.error(`The Debian packages ${need.packages.join(" and ")}: ${need.why}.`);
    console.error(`Install them with: sudo apt-get install ${stillMissing.flatMap((need) => need.packages).join(" ")}`);
    process.exit(1);
  }
}
