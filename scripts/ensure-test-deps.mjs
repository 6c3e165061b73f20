// Makes sure what the test suite needs beyond npm is present: Debian's python3-grpcio and
// python3-grpc-tools for the Python client tests, and pip, setuptools and venv for the test that
// installs the Python provider library. Installs them with apt-get when running as root;
// otherwise names the missing packages and exits non-zero.
import { execFileSync, spawnSync } from "node:child_process";

const python = "/usr/bin/python3";
const packages = ["python3-grpcio", "python3-grpc-tools", "python3-pip", "python3-setuptools", "python3-venv"];

// setuptools first: imported after pip, its distutils shim fails an assertion.
function pythonHasGrpc() {
  const probe = spawnSync(python, ["-c", "import setuptools, grpc, grpc_tools.protoc, pip, venv"], { stdio: "ignore" });
  return probe.status === 0;
}

if (!pythonHasGrpc()) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const hasAptGet = spawnSync("sh", ["-c", "command -v apt-get"], { stdio: "ignore" }).status === 0;
  if (isRoot && hasAptGet) {
    console.log(`installing ${packages.join(" ")} for the Python client tests...`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
    execFileSync("apt-get", ["install", "-y", "-qq", ...packages], { stdio: "inherit", env });
  }
  if (!pythonHasGrpc()) {
    console.error(
      `The Python client tests need ${python} with the Debian packages ${packages.join(" and ")}.\n` +
        `Install them with: sudo apt-get install ${packages.join(" ")}`,
    );
    process.exit(1);
  }
}
