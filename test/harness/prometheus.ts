/**
 * A reader of the Prometheus text exposition format (0.0.4), written for the tests from the format's
 * description rather than taken from prom-client, so that what a scrape says is checked independently.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` of each metric family. */
  types: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;

function unescapeLabelValue(value: string): string {
  return value.replace(/\\(n|"|\\)/g, (_match, escaped: string) => (escaped === 'n' ? '\n' : escaped));
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  // Prometheus reads floats with Go's ParseFloat: NaN in any letter case (prom-client writes `Nan`).
  if (text.toLowerCase() === 'nan') return NaN;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${text}`);
  return value;
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(LABEL)) labels[label[1]!] = unescapeLabelValue(label[2]!);
    samples.push({ name: match[1]!, labels, value: parseValue(match[3]!) });
  }
  return { samples, types };
}

/** Sum of the samples named `name` whose labels include every pair of `labels`. */
export function sampleSum(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const sample of exposition.samples) {
    if (sample.name !== name) continue;
    if (Object.entries(labels).every(([key, value]) => sample.labels[key] === value)) sum += sample.value;
  }
  return sum;
}

/** The samples named `name` whose labels include every pair of `labels`. */
export function samplesOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return exposition.samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
}
