import { expect } from "chai";
import { isoTime } from "../../src/runner/iso-time.js";
import { seededRandom } from "./random-messages.js";

describe("isoTime()", () => {
  it("formats every time as Date.prototype.toISOString does", () => {
    const random = seededRandom(5);
    const times = [
      0, 1, 999, 1000, 1001, -1, -999, -1000, -1001, 0.9, -0.9, 1.5, -1.5, 8.64e15, -8.64e15, 253402300799999,
    ];
    for (let i = 0; i < 20_000; i++) {
      const scale = [1, 1e3, 1e6, 1e9, 1e12, 8e15][i % 6] as number;
      times.push((random() - 0.5) * 2 * scale);
    }
    // Runs of nearby times, as results made one after another give: same second, then the next.
    const now = Date.now();
    for (let i = 0; i < 3000; i++) times.push(now + i * 0.7);
    // The start then the end of runs that each waited about a second, ending one after another.
    for (let i = 0; i < 3000; i++) times.push(now + i * 0.4, now + 999.5 + i * 0.4 + (i % 3));
    for (const time of times) expect(isoTime(time), String(time)).to.equal(new Date(time).toISOString());
  });

  it("throws RangeError for a time that is not valid, as toISOString does", () => {
    for (const time of [Number.NaN, Infinity, -Infinity, 8.64e15 + 1]) {
      expect(() => isoTime(time)).to.throw(RangeError);
      expect(() => new Date(time).toISOString()).to.throw(RangeError);
    }
  });
});
