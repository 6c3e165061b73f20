/** One sample of a Prometheus text exposition: a metric name, its labels and its value. */
export interface MetricSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const samplePattern = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function unescapeLabel(value: string): string {
  return value.replace(/\\(["\\n])/g, (_, char: string) => (char === "n" ? "\n" : char));
}

/** Parses the Prometheus text format (version 0.0.4): comments skipped, timestamps ignored. */
export function parseMetricsText(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = samplePattern.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(labelPattern)) {
      labels[label[1] as string] = unescapeLabel(label[2] as string);
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * Scrapes `GET <httpUrl>/metrics` (the toolruntime's HTTP port) and parses it. Throws on a status
 * other than 200.
 */
export async function scrapeMetrics(httpUrl: string): Promise<MetricSample[]> {
  const response = await fetch(`${httpUrl}/metrics`);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${httpUrl}/metrics: HTTP ${response.status}: ${text}`);
  return parseMetricsText(text);
}

/** The samples named `name` whose labels include every label of `where`. */
export function samplesOf(
  samples: readonly MetricSample[],
  name: string,
  where: Readonly<Record<string, string>> = {},
): MetricSample[] {
  return samples.filter(
    (sample) => sample.name === name && Object.entries(where).every(([label, value]) => sample.labels[label] === value),
  );
}

/** The value of the one sample named `name` with labels `where`; NaN when there is none. */
export function valueOf(
  samples: readonly MetricSample[],
  name: string,
  where: Readonly<Record<string, string>> = {},
): number {
  return samplesOf(samples, name, where)[0]?.value ?? Number.NaN;
}
