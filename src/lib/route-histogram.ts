import type { Registry } from 'prom-client';

/** The status classes a response falls in, by its first digit. */
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/**
 * A Prometheus histogram of request durations by route pattern and status class, cheap enough
 * for every request of the accept path: an observation is a lookup of its route's row and a few
 * additions into a Float64Array (prom-client's own observe hashes its labels each time, about
 * a microsecond). The rows are written out in the text format at scrape time, through the
 * registry's metric interface (name, help, type and get(), as prom-client's own metrics are).
 * The routes are the server's patterns, so the label set stays as small as the route table.
 */
export class RouteHistogram {
  readonly type = 'histogram';
  /** Per route, per status class: the count in each bucket (le, not cumulative), then +Inf, count and sum. */
  private readonly rows = new Map<string, Array<Float64Array | undefined>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  observe(route: string, status: number, seconds: number): void {
    const cls = ((status / 100) | 0) - 1;
    if (cls < 0 || cls > 4) return;
    let byClass = this.rows.get(route);
    if (byClass === undefined) this.rows.set(route, (byClass = []));
    const n = this.buckets.length;
    let row = byClass[cls];
    if (row === undefined) byClass[cls] = row = new Float64Array(n + 3);
    let i = 0;
    while (i < n && seconds > this.buckets[i]!) i++;
    row[i]!++;
    row[n + 1]!++;
    row[n + 2]! += seconds;
  }

  /** The series as prom-client's registry reads them: _bucket (cumulative, with le), _sum, _count. */
  get(): Promise<{
    name: string;
    help: string;
    type: string;
    values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }>;
  }> {
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    const n = this.buckets.length;
    for (const [route, byClass] of this.rows)
      byClass.forEach((row, cls) => {
        if (row === undefined) return;
        const labels = { route, status_class: CLASSES[cls]! };
        let cumulative = 0;
        for (let i = 0; i < n; i++) {
          cumulative += row[i]!;
          values.push({
            metricName: `${this.name}_bucket`,
            labels: { ...labels, le: this.buckets[i]! },
            value: cumulative,
          });
        }
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: row[n + 1]! });
        values.push({ metricName: `${this.name}_sum`, labels, value: row[n + 2]! });
        values.push({ metricName: `${this.name}_count`, labels, value: row[n + 1]! });
      });
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values });
  }

  reset(): void {
    this.rows.clear();
  }
}
