import { create, equals } from "@bufbuild/protobuf";
import { expect } from "chai";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { SpecPacker } from "../../src/registry/spec-packer.js";
import { SpecPackingWorker } from "../../src/registry/spec-packing-worker.js";

function specFor(index: number, family: string): ToolSpec {
  return create(ToolSpecSchema, {
    name: `${family}.tool_${index}`,
    description: `Tool ${index} of the ${family} family: it reads things and writes nothing.`,
    toolType: "function",
    inputSchema: { type: "object", properties: { [`field_${index}`]: { type: "string", maxLength: index + 1 } } },
  });
}

const fixture = (name: string): URL => new URL(`../fixtures/${name}`, import.meta.url);

/** Collects the process's warnings while `run` runs. */
async function warningsDuring(run: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = [];
  const listener = (warning: Error): void => {
    warnings.push(warning.message);
  };
  process.on("warning", listener);
  try {
    await run();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off("warning", listener);
  }
  return warnings;
}

describe("spec packing worker", () => {
  it("packs on its thread exactly what packing here gives, in order, against each spec's own dictionary", async () => {
    const worker = new SpecPackingWorker();
    try {
      const alpha = SpecPacker.fromSamples([1, 2, 3].map((index) => specFor(index, "alpha")));
      const beta = SpecPacker.fromSamples([1, 2, 3].map((index) => specFor(index, "beta")));
      const specs = Array.from({ length: 300 }, (_, index) => specFor(index + 10, index % 3 === 0 ? "beta" : "alpha"));
      const packerOf = (index: number): SpecPacker => (index % 3 === 0 ? beta : alpha);
      const packed = await worker.packAll(specs.map((spec, index) => packerOf(index).jobFor(spec)));
      expect(packed).to.have.length(300);
      for (const [index, spec] of specs.entries()) {
        expect(packed[index], `spec ${index}`).to.equal(packerOf(index).pack(spec));
        expect(equals(ToolSpecSchema, packerOf(index).unpack(packed[index] as string), spec)).to.equal(true);
      }
      expect(worker.running).to.equal(true);
      expect(await worker.packAll([])).to.deep.equal([]);
    } finally {
      await worker.stop();
    }
  });

  it("ends its thread when idle, and starts another for the next batch", async () => {
    const worker = new SpecPackingWorker({ idleMs: 10 });
    try {
      const packer = SpecPacker.fromSamples([specFor(1, "idle")]);
      expect(worker.running).to.equal(false);
      await worker.packAll([packer.jobFor(specFor(2, "idle"))]);
      expect(worker.running).to.equal(true);
      while (worker.running) await new Promise((resolve) => setTimeout(resolve, 5));
      const [packed] = await worker.packAll([packer.jobFor(specFor(3, "idle"))]);
      expect(packed).to.equal(packer.pack(specFor(3, "idle")));
    } finally {
      await worker.stop();
    }
  });

  it("refuses batches in flight when stopped, and packs again afterwards", async () => {
    const worker = new SpecPackingWorker();
    const packer = SpecPacker.fromSamples([specFor(1, "stop")]);
    const refused = worker.packAll([packer.jobFor(specFor(2, "stop"))]).then(
      () => "packed",
      (error: unknown) => String(error),
    );
    await worker.stop();
    expect(await refused).to.equal("Error: the spec packing thread was stopped");
    const [packed] = await worker.packAll([packer.jobFor(specFor(3, "stop"))]);
    expect(packed).to.equal(packer.pack(specFor(3, "stop")));
    await worker.stop();
  });

  it("keeps a process alive while a batch is at its thread, and not while the thread is idle", async () => {
    // A process whose only work is one batch: it must print the packed form (kept alive for the
    // answer), then exit on its own although the thread would idle for a minute.
    const script = `
      import { create } from "@bufbuild/protobuf";
      import { ToolSpecSchema } from ${JSON.stringify(new URL("../../gen/toolruntime/v1/tool_pb.js", import.meta.url).href)};
      import { SpecPacker } from ${JSON.stringify(new URL("../../src/registry/spec-packer.js", import.meta.url).href)};
      import { SpecPackingWorker } from ${JSON.stringify(new URL("../../src/registry/spec-packing-worker.js", import.meta.url).href)};
      const spec = create(ToolSpecSchema, { name: "alive.tool", description: "kept alive" });
      const packer = SpecPacker.fromSamples([spec]);
      const [packed] = await new SpecPackingWorker({ idleMs: 60_000 }).packAll([packer.jobFor(spec)]);
      console.log(packed === packer.pack(spec) ? "packed" : "different");
    `;
    const started = performance.now();
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
      cwd: new URL("../../..", import.meta.url),
      timeout: 30_000,
    });
    expect(stdout.trim()).to.equal("packed");
    expect(performance.now() - started).to.be.below(30_000);
  });

  for (const [script, reason] of [
    ["failing-packing-thread.js", "this packing thread fails as it starts"],
    ["exiting-packing-thread.js", "the spec packing thread exited with code 3"],
  ] as const) {
    it(`refuses this batch and every later one, and warns once, when its thread fails (${script})`, async () => {
      const worker = new SpecPackingWorker({ script: fixture(script) });
      const packer = SpecPacker.fromSamples([specFor(1, "fail")]);
      const errors: unknown[] = [];
      const warnings = await warningsDuring(async () => {
        await worker.packAll([packer.jobFor(specFor(2, "fail"))]).catch((error: unknown) => errors.push(error));
        await worker.packAll([packer.jobFor(specFor(3, "fail"))]).catch((error: unknown) => errors.push(error));
      });
      expect(errors).to.have.length(2);
      expect(String(errors[0])).to.equal(`Error: packing specs on a worker thread failed: ${reason}`);
      expect(errors[1]).to.equal(errors[0]);
      expect(worker.failure).to.equal(errors[0]);
      expect(worker.running).to.equal(false);
      expect(warnings).to.deep.equal([
        `packing specs on a worker thread failed: ${reason}; registries pack on the event loop from now on`,
      ]);
    });
  }
});
