// npm 11 warns about every dependency whose install script package.json's `allowScripts` does not decide,
// and npm 12 will not run such a script at all (better-sqlite3 would then have no binding). Every package
// the lockfile marks `hasInstallScript` must be decided by name (true: we need it; false: we do not), so
// a version bump never drops an approval. .ci/run's `npm ci --strict-allow-scripts` fails on the same gap.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../kubernetes/manifests.js';

interface Lock {
  packages: Record<string, { version?: string; hasInstallScript?: boolean }>;
}

const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as Lock;
/** node_modules/a/node_modules/@s/b -> @s/b */
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

describe('package.json allowScripts', () => {
  const withScripts = [
    ...new Set(
      Object.entries(lock.packages)
        .filter(([, p]) => p.hasInstallScript)
        .map(([path]) => nameOf(path)),
    ),
  ].sort();
  it('decides every dependency with an install script, by name only', () => {
    expect(withScripts.length).toBeGreaterThan(0);
    expect(Object.keys(pkg.allowScripts ?? {}).sort()).toEqual(withScripts);
    for (const [name, allowed] of Object.entries(pkg.allowScripts!)) {
      expect(name, 'a name-only entry (no @version)').toMatch(/^(@[^@/]+\/)?[^@/]+$/);
      expect(typeof allowed).toBe('boolean');
    }
  });
  it('allows the ones we need: the native bindings and esbuild', () => {
    // better-sqlite3 (the fencing SQL store) and classic-level (LevelDB) build or fetch their binding in
    // their install script; esbuild's postinstall checks its platform binary. protobufjs' postinstall only
    // prints a version-scheme warning: denied.
    expect(pkg.allowScripts).toEqual({ 'better-sqlite3': true, 'classic-level': true, esbuild: true, protobufjs: false });
  });
});
