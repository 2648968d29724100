// Counts and observations of the hot path kept in plain numbers and handed to prom-client when the registry
// is read. prom-client validates and hashes the labels on every inc()/observe() — a bound child from
// labels() too — and allocates for it: on a loaded leader, prom-client was ~2 % of the busy time for the
// six or so counts and timings of each acquire + release. A tally costs an add; the metric it feeds
// flushes it first thing whenever it is read (its collect(), which prom-client runs before every read:
// a scrape, the dashboard's samples, a test's get()), so every read sees exactly the series, values and
// sums it saw before.
import type { Counter, Histogram, LabelValues } from 'prom-client';

/** Something a metric's collect() hands its pending counts to. */
interface Pending {
  flush(): void;
}

/** The tallies feeding one prom-client metric, flushed by its collect(). */
export class TallyGroup {
  private readonly members: Pending[] = [];

  add<T extends Pending>(t: T): T {
    this.members.push(t);
    return t;
  }

  flush(): void {
    for (const t of this.members) t.flush();
  }
}

/** A counter with fixed labels: inc() is an add; flush() gives prom-client the sum. */
export class CounterTally<L extends string> {
  private pending = 0;

  constructor(
    private readonly counter: Counter<L>,
    private readonly labels: Partial<Record<L, string>>,
  ) {}

  inc(): void {
    this.pending++;
  }

  flush(): void {
    if (this.pending === 0) return;
    const n = this.pending;
    this.pending = 0;
    this.counter.inc(this.labels, n);
  }
}

/** Observations held until the histogram is read, then observed in their order (the same buckets, count
 *  and sum, to the last bit, as observed one by one). A full buffer flushes at once: memory stays bounded
 *  when nothing reads the metric. */
export class HistogramTally<L extends string> {
  private readonly values: Float64Array;
  private n = 0;
  /** The labels' own observe (labels()): histogram.observe(labels, v) makes a closure per call for it. */
  private readonly observeOne: (value: number) => void;

  constructor(histogram: Histogram<L>, labels: Partial<Record<L, string>>, capacity = 1024) {
    this.values = new Float64Array(capacity);
    this.observeOne = histogram.labels(labels as LabelValues<L>).observe;
  }

  observe(value: number): void {
    this.values[this.n++] = value;
    if (this.n === this.values.length) this.flush();
  }

  flush(): void {
    const n = this.n;
    this.n = 0;
    for (let i = 0; i < n; i++) this.observeOne(this.values[i]!);
  }
}
