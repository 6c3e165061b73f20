// Regenerates the Python messages and grpcio stubs of the contract that the Python provider
// library ships (examples/python/toolruntime/v1/), so that it installs and imports without a
// protoc step. Uses Debian's protoc and gRPC plugin (protobuf-compiler, protobuf-compiler-grpc):
// their code runs on protobuf 3.20 and later, unlike the old protoc inside python3-grpc-tools.
// CI runs it and fails when the committed files differ. `toolruntime` and `toolruntime.v1` stay
// namespace packages (no __init__.py), so stubs a user puts earlier on sys.path take precedence.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const outDir = path.join(root, "examples/python");
const packageDir = path.join(outDir, "toolruntime");
const protoc = "/usr/bin/protoc";
const grpcPlugin = "/usr/bin/grpc_python_plugin";
const python = "/usr/bin/python3";

for (const [tool, debianPackage] of [
  [protoc, "protobuf-compiler"],
  [grpcPlugin, "protobuf-compiler-grpc"],
]) {
  if (spawnSync(tool, ["--version"], { stdio: "ignore" }).error) {
    console.error(`${tool} is missing: install it with "apt-get install ${debianPackage}"`);
    process.exit(1);
  }
}

// The well-known types' .proto files (google/protobuf/struct.proto, ...) come with grpc_tools,
// which the Python tests need anyway.
const wellKnownTypes = execFileSync(python, [
  "-c",
  "import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), '_proto'))",
])
  .toString()
  .trim();

const contract = readdirSync(path.join(root, "proto/toolruntime/v1"))
  .filter((file) => file.endsWith(".proto"))
  .sort()
  .map((file) => `proto/toolruntime/v1/${file}`);

rmSync(packageDir, { recursive: true, force: true });
mkdirSync(packageDir, { recursive: true });
execFileSync(
  protoc,
  [
    "-I",
    "proto",
    "-I",
    wellKnownTypes,
    `--plugin=protoc-gen-grpc_python=${grpcPlugin}`,
    `--python_out=${outDir}`,
    `--grpc_python_out=${outDir}`,
    ...contract,
  ],
  { cwd: root, stdio: "inherit" },
);
console.log(`generated ${path.relative(root, packageDir)}/ from ${contract.length} files of proto/toolruntime/v1`);
