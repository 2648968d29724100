// Draws the timeline page of a kept chaos run: reads DIR/history.jsonl, DIR/faults.json and (if present)
// DIR/verdict.json, and writes DIR/timeline.html.
//   npm run build:test && node build/scripts/timeline.js DIR [--title TEXT]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { historyFromJsonl } from '../test/lin/history.js';
import { renderTimeline, type TimelineFault } from '../test/lin/timeline.js';
import type { Violation } from '../test/lin/checker.js';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { title: { type: 'string' } } });
const dir = positionals[0];
if (!dir) {
  console.error('usage: node build/scripts/timeline.js DIR [--title TEXT]   (DIR holds history.jsonl, faults.json[, verdict.json])');
  process.exit(2);
}
const history = historyFromJsonl(readFileSync(join(dir, 'history.jsonl'), 'utf8'));
const faults = existsSync(join(dir, 'faults.json')) ? (JSON.parse(readFileSync(join(dir, 'faults.json'), 'utf8')) as TimelineFault[]) : [];
const violations = existsSync(join(dir, 'verdict.json'))
  ? ((JSON.parse(readFileSync(join(dir, 'verdict.json'), 'utf8')) as { verdict: { violations: Violation[] } }).verdict.violations ?? [])
  : [];
const times = [
  ...history.flatMap((o) => [o.invokeMs, o.completeMs ?? o.invokeMs]),
  ...faults.flatMap((f) => [f.startMs, f.endMs ?? f.startMs]),
];
const startMs = Math.min(...times);
const endMs = Math.max(...times);
const out = join(dir, 'timeline.html');
writeFileSync(out, renderTimeline({ history, faults, violations, startMs, endMs, title: values.title ?? `leasehold chaos run (${dir})` }));
console.log(`wrote ${out} (${history.length} operations, ${faults.length} faults, ${violations.length} violations)`);
