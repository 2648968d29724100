// Latency summaries of one run. Nearest-rank percentiles: the value at rank ceil(p/100 * n), so p99 of 100
// samples is the 99th smallest, and a percentile is always a latency that was really observed.

export interface LatencySummary {
  count: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Nearest-rank percentile of ascending `sorted`; NaN when there are no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samplesMs: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samplesMs).sort();
  const arr = Array.from(sorted);
  return {
    count: arr.length,
    p50Ms: percentile(arr, 50),
    p90Ms: percentile(arr, 90),
    p99Ms: percentile(arr, 99),
    maxMs: arr.length ? arr[arr.length - 1]! : NaN,
  };
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/** a / b, NaN when either side is missing or b is 0 (a ratio of nothing is not 0× or ∞×). */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : NaN;
}
