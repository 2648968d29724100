// log.format: JSON lines for collectors, pino-pretty for people; `auto` follows the terminal; the
// environment variable LEASEHOLD_LOG_FORMAT (set by `leasehold dev`) overrides the file.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { effectiveFormat, prettyWanted } from '../../../src/server/assembly/logging.js';

const LOGGING_JS = pathToFileURL(resolve('dist/src/server/assembly/logging.js')).href;

function logLine(format: string): string {
  const script = `import(${JSON.stringify(LOGGING_JS)}).then((m) => m.createNodeLogger({ level: 'info', format: ${JSON.stringify(format)} }).warn({ nodeId: 'n1', term: 3 }, 'no leader'))`;
  const r = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    env: { ...process.env, LEASEHOLD_LOG_FORMAT: '', FORCE_COLOR: '0' },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('log.format', () => {
  it('auto is pretty on a terminal only; LEASEHOLD_LOG_FORMAT overrides the config', () => {
    expect(prettyWanted('auto', { isTTY: true })).toBe(true);
    expect(prettyWanted('auto', { isTTY: false })).toBe(false);
    expect(prettyWanted('json', { isTTY: true })).toBe(false);
    expect(prettyWanted('pretty', { isTTY: false })).toBe(true);
    expect(effectiveFormat('json', { LEASEHOLD_LOG_FORMAT: 'pretty' })).toBe('pretty');
    expect(effectiveFormat('json', { LEASEHOLD_LOG_FORMAT: 'nonsense' })).toBe('json');
  });

  it('json writes one JSON object per line; pretty writes a readable line with the level and fields', () => {
    const json = JSON.parse(logLine('json')) as { level: number; msg: string; nodeId: string };
    expect(json).toMatchObject({ level: 40, msg: 'no leader', nodeId: 'n1' });
    const pretty = logLine('pretty');
    expect(() => JSON.parse(pretty)).toThrow();
    expect(pretty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: no leader\n\s+nodeId: "n1"\n\s+term: 3/);
  });

  it('a JSON logger never loads pino-pretty (~20 ms of a node start); a pretty one does', () => {
    const loaded = (format: string): string => {
      const script = `import(${JSON.stringify(LOGGING_JS)}).then((m) => { m.createNodeLogger({ level: 'info', format: ${JSON.stringify(format)} }); process.stdout.write(String(Object.keys(require('node:module')._cache).some((f) => f.includes('/pino-pretty/')))); })`;
      const r = spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8',
        env: { ...process.env, LEASEHOLD_LOG_FORMAT: '', FORCE_COLOR: '0' },
      });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    expect(loaded('json')).toBe('false');
    expect(loaded('pretty')).toBe('true');
  });
});
