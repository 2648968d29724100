import { InvalidArgumentError } from 'commander';

/** "500", "500ms", "10s", "2m", "1h" -> milliseconds. */
export function parseDuration(value: string, field = 'duration'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError(`${field}: expected a number of milliseconds or a duration like 500ms, 10s, 2m (got "${value}")`);
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000;
  return Math.round(n * factor);
}

