import { createContextKey, createContextValues } from "@connectrpc/connect";
import { expect } from "chai";
import { newContextValues } from "../../src/server/grpc-handler-context.js";

describe("newContextValues() (a gRPC call's context values)", () => {
  it("reads, writes and deletes values as Connect's createContextValues does", () => {
    const name = createContextKey("nobody", { description: "a name" });
    const count = createContextKey<number | undefined>(undefined);
    for (const values of [newContextValues(), createContextValues()]) {
      expect(values.get(name)).to.equal("nobody");
      expect(values.get(count)).to.equal(undefined);
      expect(values.set(name, "ada").set(count, 0)).to.equal(values);
      expect([values.get(name), values.get(count)]).to.deep.equal(["ada", 0]);
      expect(values.delete(name)).to.equal(values);
      expect(values.get(name)).to.equal("nobody");
      expect(values.get(count)).to.equal(0);
    }
  });

  it("keeps each call's values apart", () => {
    const key = createContextKey("default");
    const first = newContextValues().set(key, "first");
    const second = newContextValues();
    expect(first.get(key)).to.equal("first");
    expect(second.get(key)).to.equal("default");
  });
});
