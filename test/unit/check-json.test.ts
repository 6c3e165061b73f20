import { expect } from "chai";
import { checkJsonObject, defaultJsonLimits } from "../../src/json/check-json.js";

describe("checkJsonObject()", () => {
  const check = (value: unknown, limits = defaultJsonLimits) => checkJsonObject(value, "value", limits);
  const problem = (value: unknown): string => {
    const result = check(value);
    if (result.ok) throw new Error("expected a problem");
    return result.problem;
  };

  it("accepts plain JSON and returns a copy the original cannot change", () => {
    const original = { a: [1, "x", null, true, { b: -0.5 }] };
    const result = check(original);
    expect(result.ok).to.equal(true);
    if (!result.ok) return;
    expect(result.value).to.deep.equal(original);
    (original.a[4] as { b: number }).b = 99;
    expect((result.value["a"] as { b: number }[])[4]?.b).to.equal(-0.5);
    expect(result.bytes).to.equal(JSON.stringify({ a: [1, "x", null, true, { b: -0.5 }] }).length);
  });

  it("counts the bytes of the compact JSON text, for numbers of every kind and strings beyond ASCII", () => {
    const numbers = [0, -0, 7, -7, 9, 10, 99, 100, -100, 123456789, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 1e21];
    numbers.push(0.5, -0.25, 1e-7, 123.456, Number.MAX_VALUE, Number.MIN_VALUE, 1e300, -1.5e-300);
    for (let index = 0; index < 200; index++) numbers.push(Math.round((Math.random() - 0.5) * 10 ** (index % 17)));
    const value = { numbers, text: "naïve ☃ 🎉", nested: [{ "key é": [true, false, null] }, []], empty: {} };
    const result = check(value);
    expect(result.ok).to.equal(true);
    if (result.ok) expect(result.bytes).to.equal(Buffer.byteLength(JSON.stringify(value)));
  });

  it("names the path of a problem deep inside arrays and objects", () => {
    expect(problem({ a: [{ b: [0, { c: 1n }] }] })).to.equal("value.a[0].b[1].c is a BigInt: it is not a JSON value");
    const cycle: Record<string, unknown> = { x: [1] };
    (cycle["x"] as unknown[]).push({ back: cycle });
    expect(problem(cycle)).to.equal("value.x[1].back is a reference to one of its ancestors: JSON cannot hold cycles");
  });

  it("accepts a shared, acyclic reference twice", () => {
    const shared = { v: 1 };
    expect(check({ left: shared, right: shared }).ok).to.equal(true);
  });

  it("names the path and the kind of each non-JSON value", () => {
    expect(problem({ n: Number.NaN })).to.equal("value.n is NaN: JSON numbers must be finite");
    expect(problem({ n: [1, Number.NEGATIVE_INFINITY] })).to.equal(
      "value.n[1] is -Infinity: JSON numbers must be finite",
    );
    expect(problem({ big: 1n })).to.equal("value.big is a BigInt: it is not a JSON value");
    expect(problem({ u: undefined })).to.equal("value.u is undefined: it is not a JSON value");
    expect(problem({ f: () => 1 })).to.equal("value.f is a function: it is not a JSON value");
    expect(problem({ s: Symbol("x") })).to.equal("value.s is a symbol: it is not a JSON value");
    expect(problem({ m: new Map() })).to.equal("value.m is a Map: only plain objects and arrays are JSON");
    expect(problem(undefined)).to.equal("value is undefined: it must be a JSON object");
    expect(problem([1])).to.equal("value is an array: it must be a JSON object");
  });

  it("detects cycles", () => {
    const node: Record<string, unknown> = {};
    node["next"] = { back: node };
    expect(problem(node)).to.equal("value.next.back is a reference to one of its ancestors: JSON cannot hold cycles");
  });

  it("enforces the depth and size limits", () => {
    const limits = { maxDepth: 2, maxBytes: 20 };
    const deep = checkJsonObject({ a: { b: {} } }, "value", limits);
    expect(deep.ok ? "" : deep.problem).to.equal("value.a.b is nested deeper than 2 levels");
    const large = checkJsonObject({ text: "x".repeat(30) }, "value", limits);
    expect(large.ok ? "" : large.problem).to.equal("value.text is larger than the limit of 20 bytes");
  });

  it("never throws, even for a getter that throws", () => {
    const hostile = Object.defineProperty({}, "boom", {
      enumerable: true,
      get() {
        throw new Error("nope");
      },
    });
    expect(problem(hostile)).to.equal("value could not be read: Error: nope");
  });

  it("never throws, even for proxies whose traps throw, or for what cannot be turned into text", () => {
    const trap = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error("no prototype");
        },
      },
    );
    expect(problem(trap)).to.equal("value could not be read: Error: no prototype");
    expect(problem({ nested: trap })).to.equal("value could not be read: Error: no prototype");
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(problem(proxy)).to.match(/^value could not be read: TypeError: .*revoked/);
    expect(problem({ list: [proxy] })).to.match(/^value could not be read: TypeError: .*revoked/);
    const untextable = Object.defineProperty({}, "boom", {
      enumerable: true,
      get() {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
        throw {
          toString: () => {
            throw new Error("no text either");
          },
        };
      },
    });
    expect(problem(untextable)).to.equal("value could not be read: a value that cannot be described");
    const long = Object.defineProperty({}, "boom", {
      enumerable: true,
      get() {
        throw new Error("x".repeat(100_000));
      },
    });
    expect(problem(long).length).to.be.below(1100);
  });

  it("keeps a __proto__ key as an ordinary field", () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}}') as unknown;
    const result = check(parsed);
    expect(result.ok).to.equal(true);
    if (!result.ok) return;
    expect(Object.getPrototypeOf(result.value)).to.equal(Object.prototype);
    expect(Object.keys(result.value)).to.deep.equal(["__proto__"]);
    expect(({} as Record<string, unknown>)["polluted"]).to.equal(undefined);
  });
});
