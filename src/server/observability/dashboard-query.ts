// Query parameters of the dashboard's JSON and event endpoints, read strictly: an unknown or repeated
// parameter, or a value out of its range, is refused with a 400 naming the parameter (README "Dashboard"),
// so a typo in a URL an operator wrote by hand says what is wrong instead of being silently ignored.

/** A request the dashboard refuses as malformed: `parameter` is the query parameter (or header) at fault. */
export class BadQueryError extends Error {
  override readonly name = 'BadQueryError';
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(message);
  }
}

/** The query of `url` as one value per name; throws BadQueryError for a name not in `allowed` or a repeated one. */
export function readQuery(url: URL, allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (!allowed.includes(name)) {
      const known = allowed.length ? `this endpoint takes ${allowed.join(', ')}` : 'this endpoint takes none';
      throw new BadQueryError(name, `unknown query parameter '${name}': ${known}`);
    }
    if (out.has(name)) throw new BadQueryError(name, `query parameter '${name}' is given more than once`);
    out.set(name, value);
  }
  return out;
}

/** A whole decimal number in [min, max], or `fallback` when the parameter is absent. */
export function wholeNumber(parameter: string, raw: string | undefined, range: { min: number; max: number; fallback: number }): number {
  if (raw === undefined) return range.fallback;
  const { min, max } = range;
  // Digits only: no sign, exponent, fraction or spaces, and few enough that Number() is exact.
  if (!/^[0-9]{1,16}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new BadQueryError(
      parameter,
      `${parameter} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw.slice(0, 40))}`,
    );
  }
  return Number(raw);
}

/** A yes/no switch: 1/true or 0/false; `fallback` when absent. */
export function flag(parameter: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  if (raw === '1' || raw === 'true') return true;
  if (raw === '0' || raw === 'false') return false;
  throw new BadQueryError(parameter, `${parameter} must be 1, 0, true or false, got ${JSON.stringify(raw.slice(0, 40))}`);
}
