// The picture of a chaos run: one self-contained HTML page with an inline SVG (no scripts, no fetches).
//
//   - a time axis in seconds from the run's start, with grid lines;
//   - the nemesis: every fault window shaded across the whole plot, labelled in its own lane at the top
//     (overlapping faults stack into sub-rows);
//   - one lane per client: its operations from invoke to complete, coloured by outcome (ok, refused = a
//     definite 'fail', unknown = 'info' from a timeout or an unreachable node, error = any other 'info').
//     A lane with more operations than it has pixels for is drawn as per-bucket stacked bars instead, so a
//     10-minute run with thousands of operations stays light;
//   - holder windows per key, coloured by the client that held them, outlined by how they ended;
//   - violations: a red line through every lane at the moment of the operation that showed it, numbered,
//     and listed with their messages under the picture.
import type { HolderWindow, Op } from './history.js';
import type { Violation } from './checker.js';

export interface TimelineFault {
  kind: string;
  targets: readonly string[];
  startMs: number;
  endMs: number | null;
}

export interface TimelineWindow extends HolderWindow {
  key: string;
  process: string;
  owner: string;
  token: bigint | string;
}

export interface TimelineInput {
  history: readonly Op[];
  faults: readonly TimelineFault[];
  /** Default: the windows recorded on the history's granted acquires. */
  holderWindows?: readonly TimelineWindow[];
  violations: readonly Violation[];
  /** The run's first and last moment, on the history's clock. */
  startMs: number;
  endMs: number;
  title: string;
}

export type OutcomeClass = 'ok' | 'refused' | 'unknown' | 'error';

const COLOURS: Record<OutcomeClass, string> = { ok: '#2e9d4d', refused: '#e8a33a', unknown: '#9aa0a6', error: '#7b3fa0' };
const ENDED_BY_STROKE: Record<string, string> = { released: '#1d5fa8', lost: '#d12f2f', deadline: '#555555' };
const FAULT_FILLS = ['#f6c9c9', '#c9dcf6', '#f6e7c0', '#d3f0d0', '#e6d0f2', '#cdeff0', '#f2d8c4', '#e0e0e0'];
// Holder colours stay clear of the outcome colours (no green, orange, grey or purple).
const PROCESS_FILLS = ['#4f8fd6', '#4fb8b8', '#a07850', '#7d8ad9', '#d070a0', '#5b7f95', '#b0ab40', '#2f7f7f'];

const UNKNOWN_ERRORS = /deadline|timed? ?out|timeout|unavailable|still pending|cancel|econnrefused|connection|no leader|not leader/i;

/** How an operation is coloured. 'info' is unknown when it is the usual "we gave up waiting", else error. */
export function outcomeClass(op: Op): OutcomeClass {
  if (op.outcome === 'ok') return 'ok';
  if (op.outcome === 'fail') return 'refused';
  return op.error === undefined || UNKNOWN_ERRORS.test(op.error) ? 'unknown' : 'error';
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const num = (x: number) => (Math.round(x * 10) / 10).toString();

/** A step for about `target` ticks over `spanS` seconds, from 1-2-5 multiples. */
function tickStepS(spanS: number, target = 12): number {
  const raw = spanS / target;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-3)));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

const hashIndex = (s: string, n: number) => {
  let h = 0;
  for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return h % n;
};

interface Layout {
  x: (ms: number) => number;
  left: number;
  width: number;
}

const PLOT_WIDTH = 1500;
const LEFT = 150;
const LANE = 18;
/** A lane with more operations than this is aggregated into buckets. */
const MAX_OPS_DRAWN_PER_LANE = 700;
const BUCKET_PX = 3;

export function renderTimeline(input: TimelineInput): string {
  const spanMs = Math.max(1, input.endMs - input.startMs);
  const L: Layout = {
    left: LEFT,
    width: PLOT_WIDTH,
    x: (ms) => LEFT + (Math.min(Math.max(ms, input.startMs), input.endMs) - input.startMs) * (PLOT_WIDTH / spanMs),
  };
  const parts: string[] = [];
  let y = 82; // room above the plot for the violation markers (up to three staggered rows) and the axis

  // --- nemesis lane(s): greedy stacking of overlapping faults into rows
  const faults = [...input.faults].sort((a, b) => a.startMs - b.startMs);
  const rowEnds: number[] = [];
  const faultRow = faults.map((f) => {
    const end = f.endMs ?? input.endMs;
    let r = rowEnds.findIndex((e) => e <= f.startMs);
    if (r < 0) r = rowEnds.push(end) - 1;
    else rowEnds[r] = end;
    return r;
  });
  const kinds = [...new Set(faults.map((f) => f.kind))];
  const fill = (kind: string) => FAULT_FILLS[kinds.indexOf(kind) % FAULT_FILLS.length]!;
  const nemesisTop = y;
  const nemesisRows = Math.max(1, rowEnds.length);
  parts.push(`<text class="lane-label" x="${LEFT - 8}" y="${nemesisTop + 13}" text-anchor="end">nemesis</text>`);
  faults.forEach((f, i) => {
    const x0 = L.x(f.startMs);
    const w = Math.max(1, L.x(f.endMs ?? input.endMs) - x0);
    const label = `${f.kind} ${f.targets.join(',')}`;
    const fy = nemesisTop + faultRow[i]! * LANE;
    parts.push(
      `<g class="fault"><rect x="${num(x0)}" y="${fy}" width="${num(w)}" height="${LANE - 2}" fill="${fill(f.kind)}" stroke="#b55" stroke-width="0.5"><title>${esc(label)}: ${num((f.startMs - input.startMs) / 1000)}–${f.endMs === null ? 'end' : num((f.endMs - input.startMs) / 1000)} s</title></rect>` +
        (w > 40
          ? `<text class="fault-label" x="${num(x0 + 3)}" y="${fy + 12}">${esc(label.length * 6 > w ? label.slice(0, Math.max(3, Math.floor(w / 6) - 1)) + '…' : label)}</text>`
          : '') +
        '</g>',
    );
  });
  y = nemesisTop + nemesisRows * LANE + 18;

  // --- client lanes
  const processes = [...new Set(input.history.map((o) => o.process))].sort();
  const clientsTop = y;
  parts.push(`<text class="section" x="8" y="${clientsTop - 2}">clients</text>`);
  for (const p of processes) {
    const ops = input.history.filter((o) => o.process === p && o.completeMs !== null);
    parts.push(
      `<g class="lane client" data-process="${esc(p)}"><text class="lane-label" x="${LEFT - 8}" y="${y + 13}" text-anchor="end">${esc(p)}</text>`,
    );
    parts.push(`<line x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y + LANE - 1}" y2="${y + LANE - 1}" class="lane-sep"/>`);
    if (ops.length <= MAX_OPS_DRAWN_PER_LANE) parts.push(...ops.map((o) => opRect(o, L, y)));
    else parts.push(...bucketBars(ops, L, y, spanMs));
    parts.push('</g>');
    y += LANE;
  }
  const clientsBottom = y;

  // --- holder windows per key
  y += 14;
  const windows = input.holderWindows ?? windowsOf(input.history);
  const keys = [...new Set([...windows.map((w) => w.key), ...input.history.map((o) => o.key)])].sort();
  parts.push(`<text class="section" x="8" y="${y - 2}">holders</text>`);
  for (const k of keys) {
    parts.push(
      `<g class="lane key" data-key="${esc(k)}"><text class="lane-label" x="${LEFT - 8}" y="${y + 13}" text-anchor="end">${esc(k)}</text>`,
    );
    parts.push(`<line x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y + LANE - 1}" y2="${y + LANE - 1}" class="lane-sep"/>`);
    const own = windows.filter((w) => w.key === k);
    // More windows than pixels: outlines would paint the lane solid; the fill alone still shows who held it.
    const outline = own.length * 4 < PLOT_WIDTH;
    for (const w of own) {
      const x0 = L.x(w.startMs);
      const x1 = L.x(w.endMs ?? input.endMs);
      const stroke = outline ? (ENDED_BY_STROKE[w.endedBy ?? ''] ?? '#000') : 'none';
      parts.push(
        `<rect class="window" x="${num(x0)}" y="${y + 2}" width="${num(Math.max(1, x1 - x0))}" height="${LANE - 5}" fill="${PROCESS_FILLS[hashIndex(w.process, PROCESS_FILLS.length)]}" stroke="${stroke}" stroke-width="1"><title>${esc(
          `${w.owner} token ${String(w.token)}: ${num((w.startMs - input.startMs) / 1000)}–${w.endMs === null ? 'open' : num((w.endMs - input.startMs) / 1000)} s, ended by ${w.endedBy ?? '—'}`,
        )}</title></rect>`,
      );
    }
    parts.push('</g>');
    y += LANE;
  }
  const plotBottom = y;

  // --- fault shading across every lane (drawn first so it sits behind), grid and axis
  const back: string[] = [];
  faults.forEach((f) => {
    const x0 = L.x(f.startMs);
    back.push(
      `<rect class="fault-shade" x="${num(x0)}" y="${clientsTop}" width="${num(Math.max(1, L.x(f.endMs ?? input.endMs) - x0))}" height="${plotBottom - clientsTop}" fill="${fill(f.kind)}" opacity="0.45"/>`,
    );
  });
  const stepS = tickStepS(spanMs / 1000);
  for (let s = 0; s <= spanMs / 1000 + 1e-9; s += stepS) {
    const x = L.x(input.startMs + s * 1000);
    back.push(`<line class="grid" x1="${num(x)}" x2="${num(x)}" y1="${nemesisTop - 4}" y2="${plotBottom}"/>`);
    back.push(`<text class="tick" x="${num(x)}" y="${nemesisTop - 8}" text-anchor="middle">${num(s)}</text>`);
    back.push(`<text class="tick" x="${num(x)}" y="${plotBottom + 14}" text-anchor="middle">${num(s)}</text>`);
  }
  back.push(`<text class="tick" x="${LEFT + PLOT_WIDTH}" y="${plotBottom + 28}" text-anchor="end">time since start (s)</text>`);

  // --- violations on top
  const byIndex = new Map(input.history.map((o) => [o.index, o]));
  const front: string[] = [];
  const markers = input.violations.map((v, i) => {
    const at = Math.max(
      ...v.ops
        .map((ix) => byIndex.get(ix))
        .filter((o): o is Op => o !== undefined)
        .map((o) => o.completeMs ?? o.invokeMs),
      -Infinity,
    );
    return { v, i, x: Number.isFinite(at) ? L.x(at) : LEFT + PLOT_WIDTH };
  });
  // Markers closer than a circle's width stagger upwards (three rows, then they may touch).
  const rowLastX = [-Infinity, -Infinity, -Infinity];
  const rowOf = new Map<number, number>();
  for (const m of [...markers].sort((a, b) => a.x - b.x)) {
    let r = rowLastX.findIndex((last) => m.x - last >= 18);
    if (r < 0) r = rowLastX.indexOf(Math.min(...rowLastX));
    rowLastX[r] = m.x;
    rowOf.set(m.i, r);
  }
  markers.forEach(({ v, i, x }) => {
    const cy = nemesisTop - 32 - rowOf.get(i)! * 17;
    front.push(
      `<g class="violation" data-kind="${esc(v.kind)}"><line x1="${num(x)}" x2="${num(x)}" y1="${cy + 8}" y2="${plotBottom}" stroke="#d10000" stroke-width="2"/>` +
        `<circle cx="${num(x)}" cy="${cy}" r="8" fill="#d10000"/><text x="${num(x)}" y="${cy + 4}" text-anchor="middle" class="vnum">${i + 1}</text>` +
        `<title>${esc(`#${i + 1} [${v.kind}] ${v.message}`)}</title></g>`,
    );
  });

  const height = plotBottom + 40;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${LEFT + PLOT_WIDTH + 20}" height="${height}" viewBox="0 0 ${LEFT + PLOT_WIDTH + 20} ${height}" font-family="sans-serif" font-size="11">` +
    `<style>.lane-label{fill:#333}.section{font-weight:bold;fill:#333}.tick{fill:#555;font-size:10px}.grid{stroke:#ddd;stroke-width:1}.lane-sep{stroke:#eee}.fault-label{font-size:10px;fill:#5a1a1a}.vnum{fill:#fff;font-weight:bold;font-size:10px}</style>` +
    back.join('') +
    parts.join('') +
    front.join('') +
    '</svg>';
  return page(input, svg, processes.length, keys.length, kinds);
}

function opRect(o: Op, L: Layout, laneY: number): string {
  const x0 = L.x(o.invokeMs);
  const w = Math.max(1, L.x(o.completeMs!) - x0);
  // Automatic renewals run beside the worker's own calls: a thinner bar at the bottom of the lane.
  const auto = o.via === 'auto';
  const cls = outcomeClass(o);
  const detail = `${o.type}${o.via !== 'handle' ? ` (${o.via})` : ''} ${o.key}${o.token !== undefined ? ` token ${o.token}` : ''} → ${cls}${o.reason ? ` ${o.reason}` : ''}${o.error ? `: ${o.error}` : ''}`;
  return `<rect class="op ${cls}" x="${num(x0)}" y="${laneY + (auto ? 12 : 3)}" width="${num(w)}" height="${auto ? 4 : 8}" fill="${COLOURS[cls]}"><title>${esc(detail)}</title></rect>`;
}

/** Many operations: per BUCKET_PX column, a bar split by outcome in proportion to the counts. */
function bucketBars(ops: readonly Op[], L: Layout, laneY: number, spanMs: number): string[] {
  const buckets = Math.ceil(L.width / BUCKET_PX);
  const counts = Array.from({ length: buckets }, () => ({ ok: 0, refused: 0, unknown: 0, error: 0 }));
  for (const o of ops) {
    const b = Math.min(buckets - 1, Math.max(0, Math.floor(((L.x(o.invokeMs) - L.left) / L.width) * buckets)));
    counts[b]![outcomeClass(o)]++;
  }
  const out: string[] = [];
  const msPerBucket = spanMs / buckets;
  counts.forEach((c, b) => {
    const total = c.ok + c.refused + c.unknown + c.error;
    if (total === 0) return;
    let yy = laneY + 2;
    const x = L.left + b * BUCKET_PX;
    for (const cls of ['error', 'unknown', 'refused', 'ok'] as const) {
      if (c[cls] === 0) continue;
      const h = Math.max(1, ((LANE - 5) * c[cls]) / total);
      out.push(`<rect class="op ${cls} bucket" x="${x}" y="${num(yy)}" width="${BUCKET_PX}" height="${num(h)}" fill="${COLOURS[cls]}"/>`);
      yy += h;
    }
    out.push(
      `<rect x="${x}" y="${laneY + 2}" width="${BUCKET_PX}" height="${LANE - 5}" fill="none"><title>${num((b * msPerBucket) / 1000)} s: ${total} ops (ok ${c.ok}, refused ${c.refused}, unknown ${c.unknown}, error ${c.error})</title></rect>`,
    );
  });
  return out;
}

export function windowsOf(history: readonly Op[]): TimelineWindow[] {
  return history
    .filter((o) => o.type === 'acquire' && o.outcome === 'ok' && o.window)
    .map((o) => ({ ...o.window!, key: o.key, process: o.process, owner: o.owner ?? '', token: o.token ?? 0n }));
}

function page(input: TimelineInput, svg: string, lanes: number, keys: number, kinds: string[]): string {
  const legendItem = (colour: string, label: string, outline = false) =>
    `<span class="item"><span class="swatch" style="${outline ? `border:2px solid ${colour};background:#fff` : `background:${colour}`}"></span>${esc(label)}</span>`;
  const counts = { ok: 0, refused: 0, unknown: 0, error: 0 };
  for (const o of input.history) if (o.completeMs !== null) counts[outcomeClass(o)]++;
  const violations = input.violations
    .map((v, i) => `<li><b>#${i + 1} [${esc(v.kind)}]</b> key ${esc(v.key)}, ops ${v.ops.join(', ')}: ${esc(v.message)}</li>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(input.title)}</title>
<style>body{font-family:sans-serif;margin:16px;color:#222}h1{font-size:18px;margin:0 0 6px}.summary{color:#555;margin-bottom:8px}
.legend{margin:6px 0 10px;font-size:12px}.item{margin-right:14px;white-space:nowrap}.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
.violations{color:#a00}</style></head>
<body><h1>${esc(input.title)}</h1>
<div class="summary">${num((input.endMs - input.startMs) / 1000)} s · ${input.history.length} operations (ok ${counts.ok}, refused ${counts.refused}, unknown ${counts.unknown}, error ${counts.error}) · ${lanes} clients · ${keys} keys · ${input.faults.length} faults · <b>${input.violations.length} violation${input.violations.length === 1 ? '' : 's'}</b></div>
<div class="legend">${legendItem(COLOURS.ok, 'ok')}${legendItem(COLOURS.refused, 'refused (definite fail)')}${legendItem(COLOURS.unknown, 'unknown (timed out)')}${legendItem(COLOURS.error, 'error (other unknown)')}
 · holder window ended by: ${legendItem(ENDED_BY_STROKE.released!, 'release', true)}${legendItem(ENDED_BY_STROKE.lost!, 'LOST', true)}${legendItem(ENDED_BY_STROKE.deadline!, 'local deadline', true)}
 · ${legendItem('#d10000', 'violation')} · faults: ${kinds.map((k, i) => legendItem(FAULT_FILLS[i % FAULT_FILLS.length]!, k)).join('') || 'none'}
 · thin bars: automatic renewals</div>
${svg}
${input.violations.length ? `<h2>Violations</h2><ol class="violations">${violations}</ol>` : '<p>No violations.</p>'}
</body></html>
`;
}
