import { Counter, type CounterConfiguration, type LabelValues } from "prom-client";

/** One labelled series of a {@link TalliedCounter}: counted by adding to a number. */
export class CounterSeries {
  /** Counted since the last scrape. */
  pending = 0;

  constructor(readonly labels: Readonly<Record<string, string>>) {}

  inc(): void {
    this.pending += 1;
  }
}

/**
 * A prom-client Counter fed by plain tallies. prom-client checks and hashes the labels on every
 * `inc` (about a microsecond, on every call of the server), so each series here is an object
 * resolved once and counted with an addition; the tallies are handed to the counter at each
 * scrape, by its collect hook, so /metrics always shows every count.
 */
export class TalliedCounter<T extends string> {
  readonly counter: Counter<T>;
  readonly #series = new Map<string, CounterSeries>();
  readonly #labelNames: readonly T[];

  constructor(config: Omit<CounterConfiguration<T>, "collect">) {
    this.#labelNames = config.labelNames ?? [];
    this.counter = new Counter({ ...config, collect: () => this.#flush() });
  }

  /** The series of these labels (made on first use and kept: label sets must stay bounded). */
  series(labels: LabelValues<T>): CounterSeries {
    const values = labels as Record<string, string>;
    const key = this.#labelNames.map((name) => values[name] ?? "").join("\u0000");
    let series = this.#series.get(key);
    if (!series) {
      series = new CounterSeries({ ...values });
      this.#series.set(key, series);
    }
    return series;
  }

  #flush(): void {
    for (const series of this.#series.values()) {
      if (series.pending === 0) continue;
      this.counter.inc(series.labels as LabelValues<T>, series.pending);
      series.pending = 0;
    }
  }
}
