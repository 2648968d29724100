// bench.svg: throughput and p99 against client count, one line per system, drawn by hand (two panels, the
// client counts evenly spaced since they grow geometrically). Rounds are averaged.
import { mean } from './stats.js';
import type { RunRow } from './types.js';

export interface Series {
  system: string;
  /** [clients, value] sorted by clients. */
  points: [number, number][];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
const PANEL_W = 420;
const PANEL_H = 280;
const PAD = { left: 60, right: 20, top: 36, bottom: 44 };

export function seriesOf(rows: readonly RunRow[], value: (r: RunRow) => number): Series[] {
  const systems = [...new Set(rows.map((r) => r.system))];
  return systems.map((system) => {
    const byClients = new Map<number, number[]>();
    for (const r of rows.filter((x) => x.system === system)) byClients.set(r.clients, [...(byClients.get(r.clients) ?? []), value(r)]);
    const points = [...byClients.entries()].map(([c, vs]): [number, number] => [c, mean(vs)]).sort((a, b) => a[0] - b[0]);
    return { system, points };
  });
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const mag = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * mag).find((m) => m >= v)!;
}

function panel(title: string, unit: string, series: readonly Series[], x0: number): string {
  const clients = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const values = series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  const yMax = niceMax(Math.max(0, ...values));
  const w = PANEL_W - PAD.left - PAD.right;
  const h = PANEL_H - PAD.top - PAD.bottom;
  const xOf = (c: number) => x0 + PAD.left + (clients.length <= 1 ? w / 2 : (clients.indexOf(c) / (clients.length - 1)) * w);
  const yOf = (v: number) => PAD.top + h - (v / yMax) * h;
  const out: string[] = [];
  out.push(`<text x="${x0 + PANEL_W / 2}" y="20" text-anchor="middle" font-weight="bold">${esc(title)}</text>`);
  out.push(`<line x1="${x0 + PAD.left}" y1="${PAD.top + h}" x2="${x0 + PAD.left + w}" y2="${PAD.top + h}" stroke="#000"/>`);
  out.push(`<line x1="${x0 + PAD.left}" y1="${PAD.top}" x2="${x0 + PAD.left}" y2="${PAD.top + h}" stroke="#000"/>`);
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    out.push(`<text x="${x0 + PAD.left - 6}" y="${yOf(v) + 4}" text-anchor="end" font-size="11">${esc(v.toLocaleString('en-US'))}</text>`);
    out.push(`<line x1="${x0 + PAD.left}" y1="${yOf(v)}" x2="${x0 + PAD.left + w}" y2="${yOf(v)}" stroke="#ddd"/>`);
  }
  for (const c of clients) out.push(`<text x="${xOf(c)}" y="${PAD.top + h + 16}" text-anchor="middle" font-size="11">${c}</text>`);
  out.push(`<text x="${x0 + PAD.left + w / 2}" y="${PANEL_H - 8}" text-anchor="middle" font-size="12">clients</text>`);
  out.push(
    `<text x="${x0 + 14}" y="${PAD.top + h / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 ${x0 + 14} ${PAD.top + h / 2})">${esc(unit)}</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points.filter((p) => Number.isFinite(p[1]));
    if (pts.length === 0) return;
    out.push(
      `<polyline class="series" data-system="${esc(s.system)}" fill="none" stroke="${color}" stroke-width="2" points="${pts.map((p) => `${xOf(p[0]).toFixed(1)},${yOf(p[1]).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const p of pts) out.push(`<circle cx="${xOf(p[0]).toFixed(1)}" cy="${yOf(p[1]).toFixed(1)}" r="3" fill="${color}"/>`);
  });
  return out.join('\n');
}

/** The chart of one workload's rows (the blocking sweep): throughput left, p99 right, legend below. */
export function chartSvg(title: string, rows: readonly RunRow[]): string {
  const throughput = seriesOf(rows, (r) => r.opsPerSec);
  const p99 = seriesOf(rows, (r) => r.latency.p99Ms);
  const legendY = PANEL_H + 10;
  const legend = throughput
    .map(
      (s, i) =>
        `<rect x="${PAD.left + i * 160}" y="${legendY}" width="14" height="4" fill="${COLORS[i % COLORS.length]}"/><text x="${PAD.left + i * 160 + 20}" y="${legendY + 6}" font-size="12">${esc(s.system)}</text>`,
    )
    .join('\n');
  const width = 2 * PANEL_W;
  const height = PANEL_H + 50;
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<title>${esc(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    panel(`${title}: throughput`, 'cycles/s', throughput, 0),
    panel(`${title}: p99 latency`, 'p99 ms', p99, PANEL_W),
    legend,
    `</svg>`,
    '',
  ].join('\n');
}
