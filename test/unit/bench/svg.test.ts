import { describe, expect, it } from 'vitest';
import { chartSvg, seriesOf } from '../../../scripts/bench/svg.js';
import { row } from './fixtures.js';

/** Tag balance and quoted attributes: enough to tell a well-formed hand-written SVG from a broken one. */
function xmlProblems(xml: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  const body = xml.replace(/^<\?xml[^?]*\?>/, '');
  for (const m of body.matchAll(/<(\/?)([A-Za-z][\w:-]*)([^>]*?)(\/?)>/g)) {
    const [, close, name, attrs, selfClose] = m;
    if (close) {
      if (stack.pop() !== name) problems.push(`unexpected </${name}>`);
      continue;
    }
    const bare = attrs!.replace(/\s[\w:-]+="[^"<]*"/g, '').trim();
    if (bare !== '') problems.push(`<${name}> has unquoted or broken attributes: ${bare}`);
    if (!selfClose) stack.push(name!);
  }
  if (stack.length) problems.push(`unclosed: ${stack.join(',')}`);
  if (/&(?!amp;|lt;|gt;|quot;|#)/.test(body)) problems.push('unescaped &');
  if (body.replace(/<[^>]*>/g, '').includes('<')) problems.push('stray <');
  return problems;
}

describe('bench svg', () => {
  const rows = [1, 4, 16].flatMap((clients) => [
    row({ system: 'leasehold', clients, opsPerSec: 100 * clients }),
    row({ system: 'leasehold', clients, round: 2, opsPerSec: 300 * clients }),
    row({ system: 'etcd-v3lock', clients, opsPerSec: 150 * clients }),
  ]);

  it('the checker itself refuses broken markup', () => {
    expect(xmlProblems('<svg><g></svg>')).not.toEqual([]);
    expect(xmlProblems('<svg><rect x=1/></svg>')).not.toEqual([]);
    expect(xmlProblems('<svg><text>a & b</text></svg>')).not.toEqual([]);
    expect(xmlProblems('<svg><g><rect x="1"/></g></svg>')).toEqual([]);
  });

  it('is well-formed, escapes labels, and has a line per system in both panels', () => {
    const svg = chartSvg('blocking <100 keys> & more', rows);
    expect(xmlProblems(svg)).toEqual([]);
    expect(svg.startsWith('<?xml')).toBe(true);
    const lines = [...svg.matchAll(/<polyline class="series" data-system="([^"]+)"/g)].map((m) => m[1]);
    expect(lines.sort()).toEqual(['etcd-v3lock', 'etcd-v3lock', 'leasehold', 'leasehold']);
    expect(svg).toContain('blocking &lt;100 keys&gt; &amp; more');
  });

  it('series average rounds per client count, in client order', () => {
    const s = seriesOf(rows, (r) => r.opsPerSec);
    expect(s.find((x) => x.system === 'leasehold')!.points).toEqual([
      [1, 200],
      [4, 800],
      [16, 3200],
    ]);
  });
});
