// Test faults (src/test-faults) are test-only code in src/: nothing of the node imports them, except the
// node assembly's one dynamic import behind LEASEHOLD_TEST_FAULTS; the package leaves them out
// (package.json `files`; test/e2e/package.test.ts checks the packed file list), and so does the image (its
// build stage removes them before the runtime stage copies dist/; test/integration/image.test.ts builds it).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lintDockerfile } from '../../../scripts/dockerfile-lint.js';

const FAULTS = 'src/test-faults';
const RUNTIME = 'src/server/assembly/runtime.ts';

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every relative import of `file` that reaches src/test-faults, static or dynamic. */
function faultImports(file: string): { kind: 'static' | 'dynamic'; specifier: string }[] {
  const code = readFileSync(file, 'utf8');
  const found: { kind: 'static' | 'dynamic'; specifier: string }[] = [];
  const patterns: Array<['static' | 'dynamic', RegExp]> = [
    ['static', /(?:from|import)\s+['"](\.[^'"]+)['"]/g],
    ['dynamic', /(?<!typeof )import\(\s*['"](\.[^'"]+)['"]\s*\)/g],
  ];
  for (const [kind, re] of patterns) {
    for (const m of code.matchAll(re)) {
      if (normalize(join(dirname(file), m[1]!)).startsWith(FAULTS + '/')) found.push({ kind, specifier: m[1]! });
    }
  }
  return found;
}

describe('the test-faults boundary', () => {
  const files = walk('src').filter((f) => !f.startsWith(FAULTS + '/'));

  it('no file of the node imports src/test-faults statically', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(
      files.flatMap((f) =>
        faultImports(f)
          .filter((i) => i.kind === 'static')
          .map((i) => `${f}: ${i.specifier}`),
      ),
    ).toEqual([]);
  });

  it('the only import of it is the node assembly loading the switch, and only when LEASEHOLD_TEST_FAULTS is set', () => {
    const dynamic = files.flatMap((f) => faultImports(f).map((i) => `${f}: ${i.kind} ${i.specifier}`));
    expect(dynamic).toEqual([`${RUNTIME}: dynamic ../../test-faults/switch.js`]);
    const code = readFileSync(RUNTIME, 'utf8');
    expect(code).toMatch(/const testFaults = faultFile \? \(await loadTestFaults\(\)\)/);
    expect(code).toMatch(/const faultFile = process\.env\['LEASEHOLD_TEST_FAULTS'\];/);
  });

  it("the package's files leave it out", () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('dist/src');
    expect(pkg.files).toContain(`!dist/${FAULTS}`);
  });

  it('the image leaves it out: the Dockerfile removes it before the runtime stage copies dist/', () => {
    const problems = lintDockerfile(readFileSync('Dockerfile', 'utf8'));
    expect(problems.filter((p) => p.includes('test-faults'))).toEqual([]);
    // The rule is the lint's: the same Dockerfile without the removal breaks it.
    const without = readFileSync('Dockerfile', 'utf8').replace(/\s*\\\n\s*&& rm -rf dist\/src\/test-faults/, '');
    expect(lintDockerfile(without).filter((p) => p.includes('test-faults'))).toHaveLength(1);
  });
});
