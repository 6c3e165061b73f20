import { Metadata } from "@grpc/grpc-js";
import { expect } from "chai";
import { dateHeaders, withDateHeader } from "../../src/server/date-header.js";

describe("date-header", () => {
  it("gives the IMF-fixdate of the current second, as Node's HTTP/2 writes it", () => {
    const at = Date.UTC(2026, 11, 7, 3, 4, 5, 678);
    expect(dateHeaders(at).get("date")).to.deep.equal(["Mon, 07 Dec 2026 03:04:05 GMT"]);
    expect(dateHeaders(at).getMap()).to.deep.equal({ date: "Mon, 07 Dec 2026 03:04:05 GMT" });
  });

  it("shares one object within a second and makes another for the next", () => {
    const second = Date.UTC(2026, 11, 7, 3, 4, 6);
    const first = dateHeaders(second);
    expect(dateHeaders(second + 999)).to.equal(first);
    const next = dateHeaders(second + 1000);
    expect(next).to.not.equal(first);
    expect(next.get("date")).to.deep.equal(["Mon, 07 Dec 2026 03:04:07 GMT"]);
  });

  it("adds the date to a copy of metadata without one, and leaves metadata with one as it is", () => {
    const given = new Metadata();
    given.set("x-trace", "abc");
    const dated = withDateHeader(given);
    expect(dated).to.not.equal(given);
    expect(given.get("date")).to.deep.equal([]);
    expect(dated.get("x-trace")).to.deep.equal(["abc"]);
    expect(dated.get("date")).to.have.length(1);
    expect(Date.parse(dated.get("date")[0] as string)).to.be.closeTo(Date.now(), 2000);

    const own = new Metadata();
    own.set("date", "Thu, 01 Jan 2026 00:00:00 GMT");
    expect(withDateHeader(own)).to.equal(own);
  });
});
