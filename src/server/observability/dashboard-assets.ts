// The dashboard page's files (dashboard/ at the package root: plain HTML, one script, one stylesheet, no
// build step), served by name from a fixed list — a URL never becomes a file path.
//
// Where they are: this module runs as dist/src/server/*.js (the package, or an install of it under
// node_modules/leasehold), as build/src/server/*.js (the test build) or as src/server/*.ts (vitest). In each
// case the package root is the nearest directory above it whose package.json is ours, so we walk up to it
// rather than count `..`s that differ between those layouts.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'leasehold';

/** URL path -> file in dashboard/ and its content type. */
export const DASHBOARD_FILES: ReadonlyMap<string, { file: string; type: string }> = new Map([
  ['/', { file: 'index.html', type: 'text/html; charset=utf-8' }],
  ['/dashboard.js', { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' }],
  ['/dashboard.css', { file: 'dashboard.css', type: 'text/css; charset=utf-8' }],
]);

/** The page loads only our own script, style and API: injected markup could run nothing even if it got in. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The dashboard/ directory of the package this module belongs to, or null if it cannot be found. */
export function findDashboardDir(from: string = dirname(fileURLToPath(import.meta.url))): string | null {
  for (let dir = from; ;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && isOurs(manifest)) {
      const assets = join(dir, 'dashboard');
      return existsSync(join(assets, 'index.html')) ? assets : null;
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

function isOurs(manifest: string): boolean {
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME;
  } catch {
    return false;
  }
}

export class DashboardAssets {
  private readonly cache = new Map<string, Buffer>();

  constructor(private readonly dir: string | null = findDashboardDir()) {}

  /** The file served at `path`, or an Error saying why it cannot be (the route is known: a 500, not a 404). */
  read(path: string): { body: Buffer; type: string } | Error | undefined {
    const entry = DASHBOARD_FILES.get(path);
    if (entry === undefined) return undefined;
    if (this.dir === null)
      return new Error(
        `the dashboard's files (dashboard/index.html) were not found in the leasehold package above ${dirname(fileURLToPath(import.meta.url))}`,
      );
    let body = this.cache.get(entry.file);
    if (body === undefined) {
      try {
        body = readFileSync(join(this.dir, entry.file));
      } catch (err) {
        return new Error(`cannot read the dashboard's ${entry.file}: ${err instanceof Error ? err.message : String(err)}`);
      }
      // Three small files, read once: the page is the same for every request.
      this.cache.set(entry.file, body);
    }
    return { body, type: entry.type };
  }
}
