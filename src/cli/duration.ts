// Durations on the command line: always with a unit. A bare number is ambiguous (`--ttl 5`: 5 ms or 5 s?),
// so it is refused with the likely meaning spelled out; only 0 needs no unit.
import { InvalidArgumentError } from 'commander';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "500ms", "10s", "1.5s", "2m", "1h", "1m30s", "0" -> milliseconds. */
export function parseDuration(value: string, field = 'duration'): number {
  const v = value.trim();
  if (v === '0') return 0;
  if (/^\d+(?:\.\d+)?$/.test(v)) {
    throw new InvalidArgumentError(
      `${field}: "${v}" has no unit — did you mean ${v}s? (write ${v}ms for milliseconds; units: ms, s, m, h)`,
    );
  }
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(v)) {
    throw new InvalidArgumentError(`${field}: expected a duration such as 500ms, 10s, 2m or 1m30s (got "${value}")`);
  }
  let total = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return Math.round(total);
}

/** Milliseconds as a short duration for people: 850ms, 4.2s, 2m5s, 1h3m. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const neg = ms < 0 ? '-' : '';
  let rest = Math.abs(Math.round(ms));
  if (rest < 1000) return `${neg}${rest}ms`;
  if (rest < 60_000) return `${neg}${(Math.floor(rest / 100) / 10).toString()}s`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  const s = Math.floor((rest - m * 60_000) / 1000);
  return h > 0 ? `${neg}${h}h${m > 0 ? `${m}m` : ''}` : `${neg}${m}m${s > 0 ? `${s}s` : ''}`;
}

/** An epoch-ms time from the wire as an ISO date, or '' for 0 / nonsense. */
export function isoTime(epochMs: string | number): string {
  const n = Number(epochMs);
  return Number.isFinite(n) && n > 0 ? new Date(n).toISOString() : '';
}
