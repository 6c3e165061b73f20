import { expect } from "chai";
import { Histogram, Registry, type LabelValues } from "prom-client";
import { TalliedHistogram, type TalliedHistogramOptions } from "../../src/telemetry/tallied-histogram.js";

const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** A prom-client Histogram and a TalliedHistogram of the same options, each on its own registry. */
function twins<T extends string>(options: TalliedHistogramOptions<T>) {
  const expected = new Registry();
  const actual = new Registry();
  const reference = new Histogram<T>({ ...options, registers: [expected] });
  const tallied = new TalliedHistogram<T>({ ...options, registers: [actual] });
  return {
    expected,
    actual,
    reference,
    tallied,
    observe(labels: LabelValues<T>, value: number): void {
      reference.observe(labels, value);
      tallied.series(labels).observe(value);
    },
    async expectSameScrapes(): Promise<string> {
      const text = await actual.metrics();
      expect(text).to.equal(await expected.metrics());
      const json = await actual.getMetricsAsJSON();
      expect(json).to.deep.equal(await expected.getMetricsAsJSON());
      // Same key order too, so serialised JSON matches byte for byte.
      expect(JSON.stringify(json)).to.equal(JSON.stringify(await expected.getMetricsAsJSON()));
      return text;
    },
  };
}

/** A small seeded generator (mulberry32), so the random observations are the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rpcOptions = {
  name: "test_rpc_duration_seconds",
  help: "RPC duration, in seconds.",
  labelNames: ["service", "method", "protocol"] as const,
  buckets,
};

describe("TalliedHistogram", () => {
  describe("scrapes (registry.metrics() and getMetricsAsJSON())", () => {
    it("match a prom-client Histogram fed the same observations, over several label sets", async () => {
      const pair = twins(rpcOptions);
      const labelSets = [
        { service: "toolruntime.v1.RunnerService", method: "ExecuteTool", protocol: "grpc" },
        { service: "toolruntime.v1.RunnerService", method: "ExecuteTool", protocol: "connect" },
        { service: "toolruntime.v1.RegistryService", method: "ListTools", protocol: "grpc-web" },
        { service: "mcp", method: "tools/call", protocol: "mcp" },
      ];
      const random = seeded(7);
      const special = [0, -0, -1, -0.25, 300, 300.0001, 1e9, Number.MIN_VALUE, 0.1 + 0.2, ...buckets];
      for (let i = 0; i < 2000; i++) {
        const labels = labelSets[Math.floor(random() * labelSets.length)]!;
        const value = i % 3 === 0 ? special[i % special.length]! : random() ** 4 * 400;
        pair.observe(labels, value);
      }
      const text = await pair.expectSameScrapes();
      expect(text).to.contain(
        'test_rpc_duration_seconds_bucket{le="0.0005",service="mcp",method="tools/call",protocol="mcp"} ',
      );
      expect(text).to.contain(
        'test_rpc_duration_seconds_bucket{le="+Inf",service="mcp",method="tools/call",protocol="mcp"}',
      );
    });

    it("put a value on a bucket's upper bound in that bucket, and one above the last bound only in +Inf", async () => {
      const pair = twins({ name: "test_seconds", help: "Seconds.", labelNames: ["tool"], buckets: [1, 2] });
      pair.observe({ tool: "a" }, 1);
      pair.observe({ tool: "a" }, 2.5);
      pair.observe({ tool: "a" }, -3);
      const text = await pair.expectSameScrapes();
      expect(text).to.equal(
        [
          "# HELP test_seconds Seconds.",
          "# TYPE test_seconds histogram",
          'test_seconds_bucket{le="1",tool="a"} 2',
          'test_seconds_bucket{le="2",tool="a"} 2',
          'test_seconds_bucket{le="+Inf",tool="a"} 3',
          'test_seconds_sum{tool="a"} 0.5',
          'test_seconds_count{tool="a"} 3',
          "",
        ].join("\n"),
      );
    });

    it("match when nothing was observed, with labels (no series) and without (one series of zeros)", async () => {
      const labelled = twins({ name: "test_labelled_seconds", help: "Labelled.", labelNames: ["tool"], buckets });
      labelled.tallied.series({ tool: "resolved.but.never.observed" });
      expect(await labelled.expectSameScrapes()).to.equal(
        "# HELP test_labelled_seconds Labelled.\n# TYPE test_labelled_seconds histogram\n",
      );
      const bare = twins({ name: "test_bare_seconds", help: "Bare.", buckets });
      expect(await bare.expectSameScrapes()).to.contain('test_bare_seconds_bucket{le="+Inf"} 0');
      bare.observe({}, 0.003);
      await bare.expectSameScrapes();
    });

    it("list series in order of first observation, not of resolution, as prom-client does", async () => {
      const pair = twins({ name: "test_order_seconds", help: "Order.", labelNames: ["tool"], buckets });
      const first = pair.tallied.series({ tool: "resolved.first" });
      pair.observe({ tool: "observed.first" }, 0.2);
      pair.reference.observe({ tool: "resolved.first" }, 0.1);
      first.observe(0.1);
      await pair.expectSameScrapes();
    });

    it("match with prom-client's default buckets, numeric label values and values that need escaping", async () => {
      const pair = twins({
        name: "test_default_buckets",
        help: 'Help with a \\ and a "quote"\nand a line.',
        labelNames: ["code", "path"],
      });
      pair.observe({ code: 404, path: 'a "quoted" \\ path\nwith a line' }, 0.07);
      pair.observe({ code: "200", path: "/" }, 12);
      await pair.expectSameScrapes();
    });

    it("match after registry.resetMetrics(), and series resolved before it keep working", async () => {
      const pair = twins({ name: "test_reset_seconds", help: "Reset.", labelNames: ["tool"], buckets });
      pair.observe({ tool: "a" }, 0.5);
      pair.observe({ tool: "b" }, 0.5);
      pair.expected.resetMetrics();
      pair.actual.resetMetrics();
      await pair.expectSameScrapes();
      pair.observe({ tool: "b" }, 2);
      await pair.expectSameScrapes();
      const bare = twins({ name: "test_bare_reset_seconds", help: "Bare.", buckets });
      bare.expected.resetMetrics();
      bare.actual.resetMetrics();
      await bare.expectSameScrapes();
    });

    it("give the same JSON as prom-client under registry default labels", async () => {
      const pair = twins({ name: "test_default_labels_seconds", help: "Defaults.", labelNames: ["tool"], buckets });
      pair.expected.setDefaultLabels({ replica: "r1" });
      pair.actual.setDefaultLabels({ replica: "r1" });
      pair.observe({ tool: "a" }, 0.01);
      expect(await pair.actual.getMetricsAsJSON()).to.deep.equal(await pair.expected.getMetricsAsJSON());
    });
  });

  describe("observe()", () => {
    it("rejects NaN and ±Infinity with a TypeError and counts nothing, as prom-client does", async () => {
      const pair = twins({ name: "test_invalid_seconds", help: "Invalid.", labelNames: ["tool"], buckets });
      pair.observe({ tool: "a" }, 1);
      const series = pair.tallied.series({ tool: "a" });
      for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        expect(() => pair.reference.observe({ tool: "a" }, value)).to.throw(TypeError);
        expect(() => series.observe(value)).to.throw(TypeError, `histogram value ${value} is not a finite number`);
      }
      await pair.expectSameScrapes();
    });
  });

  describe("series()", () => {
    it("returns one series per label set, whatever the key order or a number's type", () => {
      const tallied = new TalliedHistogram({ ...rpcOptions, registers: [] });
      const series = tallied.series({ service: "s", method: "m", protocol: "grpc" });
      expect(tallied.series({ protocol: "grpc", method: "m", service: "s" })).to.equal(series);
      expect(tallied.series({ service: "s", method: "m", protocol: "connect" })).to.not.equal(series);
      const codes = new TalliedHistogram({ name: "test_codes", help: "Codes.", labelNames: ["code"], registers: [] });
      expect(codes.series({ code: 404 })).to.equal(codes.series({ code: "404" }));
      expect(codes.series({})).to.not.equal(codes.series({ code: "" }));
    });

    it("rejects a label that is not one of the label names, even for a known series", () => {
      const tallied = new TalliedHistogram({
        name: "test_labels",
        help: "Labels.",
        labelNames: ["tool"],
        registers: [],
      });
      tallied.series({ tool: "a" });
      expect(() => tallied.series({ tool: "a", other: "x" } as LabelValues<"tool">)).to.throw(
        Error,
        'label "other" is not one of the labels of "test_labels": tool',
      );
    });
  });

  describe("constructor", () => {
    it("rejects buckets that are not finite and strictly increasing, and a label named le", () => {
      const make = (options: Partial<TalliedHistogramOptions<string>>) => () =>
        new TalliedHistogram({ name: "test_bad", help: "Bad.", registers: [], ...options });
      expect(make({ buckets: [1, 1, 2] })).to.throw(
        Error,
        'buckets of "test_bad" must be finite and strictly increasing',
      );
      expect(make({ buckets: [2, 1] })).to.throw(Error, "strictly increasing");
      expect(make({ buckets: [1, Number.POSITIVE_INFINITY] })).to.throw(Error, "strictly increasing");
      expect(make({ labelNames: ["le"] })).to.throw(Error, 'label name "le" of "test_bad" is reserved');
      expect(make({ name: "bad name" })).to.throw(Error, 'metric name "bad name" is invalid');
    });

    it("refuses a second metric of the same name on a registry, as the registry does for any metric", () => {
      const registry = new Registry();
      new TalliedHistogram({ name: "test_twice", help: "Twice.", registers: [registry] });
      expect(() => new Histogram({ name: "test_twice", help: "Twice.", registers: [registry] })).to.throw(
        Error,
        "A metric with the name test_twice has already been registered.",
      );
    });
  });
});
