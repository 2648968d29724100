// The timeline page on fixture histories: well-formed markup, every lane, the violation markers, and a
// 10-minute-sized history kept light by aggregation.
import { describe, expect, it } from 'vitest';
import { checkHistory } from './checker.js';
import { HistoryBuilder } from './fixtures.js';
import type { Op } from './history.js';
import { outcomeClass, renderTimeline, type TimelineFault } from './timeline.js';

/** Tags of the page balance (our generator writes no comments or CDATA), and every attribute is quoted. */
function assertWellFormed(html: string): void {
  const body = html.replace(/^<!doctype html>/i, '');
  const stack: string[] = [];
  const VOID = new Set(['meta', 'br', 'hr', 'img', 'input', 'link']);
  for (const m of body.matchAll(/<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, close, name, , selfClose] = m;
    if (selfClose || VOID.has(name!)) continue;
    if (close) expect(stack.pop(), `closing </${name}>`).toBe(name);
    else stack.push(name!);
  }
  expect(stack).toEqual([]);
  // Anything that looks like a tag but did not match above (an unquoted or broken attribute) is malformed.
  const all = [...body.matchAll(/<\/?[a-zA-Z][^>]*>/g)].length;
  const good = [...body.matchAll(/<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)].length;
  expect(good).toBe(all);
}

function fixture() {
  const h = new HistoryBuilder();
  Object.assign(h.acquired('w1', 'k<1>', 5n, [0, 10], [10, 400]), { ttlMs: 1000 });
  h.write('w1', 'k<1>', 5n, [20, 30], true);
  Object.assign(h.renew('w1', 'k<1>', 'w1/5', 5n, [300, 400], 'fail', 'EXPIRED'), { ttlMs: 1000 });
  Object.assign(h.acquired('w2', 'k<1>', 9n, [500, 600], [600, 900]), { ttlMs: 1000 });
  h.refused('w3', 'k<1>', 'w2/9', [610, 620]);
  h.acquireUnknown('w3', 'other', 'w3/x', [700, 1200]);
  const odd = h.acquireUnknown('w3', 'other', 'w3/y', [1300, 1400]);
  odd.error = 'Error: something else broke';
  h.get('w2', 'other', [950, 960], { held: false, last: 0n });
  const faults: TimelineFault[] = [
    { kind: 'kill-leader', targets: ['n1'], startMs: 100, endMs: 700 },
    { kind: 'clock-skew', targets: ['n2'], startMs: 300, endMs: null },
  ];
  return { ops: h.ops, faults };
}

describe('timeline page', () => {
  it('is well-formed, has a lane per client and per key, shades and labels faults, and marks the violation', () => {
    const { ops, faults } = fixture();
    const verdict = checkHistory(ops);
    expect(verdict.violations.map((v) => v.kind)).toContain('lease-cut-short');
    const html = renderTimeline({ history: ops, faults, violations: verdict.violations, startMs: 0, endMs: 1500, title: 'fixture <run>' });
    assertWellFormed(html);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|src="http|href="http/); // self-contained
    expect(html).toContain('<title>fixture &lt;run&gt;</title>');
    for (const p of ['w1', 'w2', 'w3']) expect(html).toContain(`data-process="${p}"`);
    for (const k of ['k&lt;1&gt;', 'other']) expect(html).toContain(`data-key="${k}"`);
    expect(html.match(/class="fault"/g)).toHaveLength(2);
    expect(html.match(/class="fault-shade"/g)).toHaveLength(2);
    expect(html).toContain('>kill-leader n1<');
    const markers = html.match(/<g class="violation" data-kind="([\w-]+)"/g) ?? [];
    expect(markers).toHaveLength(verdict.violations.length);
    expect(markers[0]).toContain('lease-cut-short');
    expect(html).toContain('<h2>Violations</h2>');
    // Each outcome class shows up with its colour class.
    for (const cls of ['ok', 'refused', 'unknown', 'error']) expect(html).toContain(`class="op ${cls}"`);
    expect(html).toMatch(/>0<\/text>/); // the axis starts at 0 s
  });

  it('the markup check itself rejects broken markup', () => {
    expect(() => assertWellFormed('<svg><g></svg>')).toThrow();
    expect(() => assertWellFormed('<svg><rect x=1 /></svg>')).toThrow();
    expect(() => assertWellFormed('<svg><text>a</text>')).toThrow();
  });

  it('an empty run still renders (no lanes, no faults, no violations)', () => {
    const html = renderTimeline({ history: [], faults: [], violations: [], startMs: 0, endMs: 0, title: 'empty' });
    assertWellFormed(html);
    expect(html).toContain('No violations.');
  });

  it('classifies outcomes: fail is refused, info from a timeout is unknown, any other info is an error', () => {
    const op = (o: Partial<Op>) =>
      ({ index: 0, process: 'w', type: 'get', key: 'k', invokeMs: 0, completeMs: 1, via: 'handle', ...o }) as Op;
    expect(outcomeClass(op({ outcome: 'ok' }))).toBe('ok');
    expect(outcomeClass(op({ outcome: 'fail' }))).toBe('refused');
    expect(outcomeClass(op({ outcome: 'info', error: 'DeadlineError: deadline exceeded after 2000 ms' }))).toBe('unknown');
    expect(outcomeClass(op({ outcome: 'info', error: 'TypeError: x is undefined' }))).toBe('error');
  });

  it('a 10-minute run with thousands of operations is aggregated: the page stays small', () => {
    const h = new HistoryBuilder();
    const spanMs = 600_000;
    for (let i = 0; i < 12_000; i++) {
      const w = `w${i % 6}`;
      const t = (i * spanMs) / 12_000;
      if (i % 3 === 0) h.acquired(w, `key-${i % 4}`, BigInt(i + 1), [t, t + 20], [t + 20, t + 30]);
      else if (i % 3 === 1) h.refused(w, `key-${i % 4}`, 'x', [t, t + 15]);
      else h.get(w, `key-${i % 4}`, [t, t + 5], { held: false, last: 1n });
    }
    const html = renderTimeline({
      history: h.ops,
      faults: [{ kind: 'pause-node', targets: ['n3'], startMs: 1000, endMs: 9000 }],
      violations: [],
      startMs: 0,
      endMs: spanMs,
      title: 'big',
    });
    assertWellFormed(html);
    expect(html).toContain('class="op ok bucket"');
    expect(html.length).toBeLessThan(3_000_000);
    for (let w = 0; w < 6; w++) expect(html).toContain(`data-process="w${w}"`);
  });
});
