// `leasehold serve` parses with the serve command alone (main.ts: the other commands' modules are not loaded
// at a node's start): its help, and its refusals, are what the whole program says of it.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const MAIN_JS = resolve('dist/src/cli/main.js');

function leasehold(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN_JS, ...args], { encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('leasehold serve, parsed alone', () => {
  it('prints the serve help the whole program prints for it (`help serve`)', () => {
    const alone = leasehold('serve', '--help');
    const whole = leasehold('help', 'serve');
    expect(alone.status).toBe(0);
    expect(alone.stdout).toContain('Usage: leasehold serve [options]');
    expect(alone.stdout).toBe(whole.stdout);
  });

  it('refuses a missing --config as before: usage exit code, the option named', () => {
    const r = leasehold('serve', '--id', 'n1');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("required option '--config <file>' not specified");
  });

  it('the whole program still lists every command', () => {
    const r = leasehold('--help');
    expect(r.status).toBe(0);
    for (const command of ['serve', 'dev', 'acquire', 'watch', 'members', 'snapshot', 'run', 'elect', 'health'])
      expect(r.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });
});
