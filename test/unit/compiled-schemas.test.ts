import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { CompiledSchemas, type SchemaCompiler } from "../../src/json/compiled-schemas.js";

/** A compiler that records what it compiled; its checks name the compiler and the schema's title. */
function recordingCompilers() {
  const compiled: string[] = [];
  let made = 0;
  const newCompiler = (): SchemaCompiler => {
    const compiler = ++made;
    return (schema) => {
      const title = schema["title"] as string;
      compiled.push(title);
      if (title === "broken") throw new Error("cannot compile");
      return () => [`compiler ${compiler} checked ${title}`];
    };
  };
  return { compiled, newCompiler };
}

const schema = (title: string): JsonObject => ({ title });

describe("CompiledSchemas", () => {
  it("compiles a schema once and shares it between schemas of the same JSON text", () => {
    const { compiled, newCompiler } = recordingCompilers();
    const schemas = new CompiledSchemas(10, newCompiler);
    const first = schemas.slot(schema("a"), '{"title":"a"}');
    const second = schemas.slot(schema("a"), '{"title":"a"}');
    expect(second).to.equal(first);
    expect(compiled).to.deep.equal(["a"]);
    expect(schemas.has('{"title":"a"}')).to.equal(true);
    expect(first.check?.(null)).to.deep.equal(["compiler 1 checked a"]);
  });

  it("keeps nothing of a schema that fails to compile, and counts the attempt", () => {
    const { newCompiler } = recordingCompilers();
    const schemas = new CompiledSchemas(2, newCompiler);
    expect(() => schemas.slot(schema("broken"), "broken")).to.throw("cannot compile");
    expect(schemas.has("broken")).to.equal(false);
    schemas.slot(schema("a"), "a");
    schemas.slot(schema("b"), "b");
    expect(schemas.generation, "the failed attempt counts towards the generation").to.equal(1);
  });

  it("ends a generation after `capacity` compilations: its slots empty, a fresh compiler starts", () => {
    const { compiled, newCompiler } = recordingCompilers();
    const schemas = new CompiledSchemas(2, newCompiler);
    const a = schemas.slot(schema("a"), "a");
    const b = schemas.slot(schema("b"), "b");
    expect(schemas.generation).to.equal(0);
    const c = schemas.slot(schema("c"), "c");
    expect(schemas.generation).to.equal(1);
    expect([a.check, b.check]).to.deep.equal([undefined, undefined]);
    expect(c.check?.(null)).to.deep.equal(["compiler 2 checked c"]);
    expect(schemas.size).to.equal(1);
    const again = schemas.slot(schema("a"), "a");
    expect(again.check?.(null)).to.deep.equal(["compiler 2 checked a"]);
    expect(compiled).to.deep.equal(["a", "b", "c", "a"]);
  });
});
