// The per-fault-kind summary of a chaos run (summary.json, and the table the run prints):
//   faults      how many of this kind were injected (and how many could not be carried out);
//   during      the workers' operations invoked while a fault of this kind was in place;
//   after       those invoked after it healed and before the next fault began (recovery included);
//   ok / answered  the fraction of those that succeeded, and that got an answer at all (ok or a definite
//               fail such as "held by another"; the rest timed out or hit a dead connection);
//   recovery    per fault, the time from the heal to the first successful Get through each live member;
//               the slowest node of each fault, then the median and the worst of those over the kind.
// Only the workers' own operations count toward availability (not the harness's probes and final reads).
import type { Op } from './history.js';
import type { FaultKind, FaultRecord } from './nemesis.js';

export interface Availability {
  ops: number;
  /** ok / ops (null without operations). */
  ok: number | null;
  /** (ok + fail) / ops. */
  answered: number | null;
}

export interface KindSummary {
  faults: number;
  failedToInject: number;
  during: Availability;
  after: Availability;
  /** The slowest node's recovery of each fault (ms; null: some node did not serve within the timeout). */
  recoveryMs: {
    median: number | null;
    max: number | null;
    notRecovered: number;
    slowest: { node: string; ms: number | null; faultIndex: number } | null;
  };
}

export interface RunSummary {
  byKind: Partial<Record<FaultKind, KindSummary>>;
  /** Operations invoked with no fault in place (the same as every kind's `after`, plus the time before the first). */
  noFault: Availability;
  total: Availability;
}

export function summarizeRun(faults: readonly FaultRecord[], ops: readonly Op[], endMs: number): RunSummary {
  const client = ops.filter((o) => o.via !== 'probe' && o.via !== 'final');
  const byKind: Partial<Record<FaultKind, { faults: FaultRecord[]; during: Op[]; after: Op[] }>> = {};
  const inFault = new Set<Op>();
  faults.forEach((f, i) => {
    const bucket = (byKind[f.kind] ??= { faults: [], during: [], after: [] });
    bucket.faults.push(f);
    const end = f.endMs ?? endMs;
    const nextStart = faults[i + 1]?.startMs ?? endMs;
    for (const op of client) {
      if (op.invokeMs >= f.startMs && op.invokeMs < end) {
        bucket.during.push(op);
        inFault.add(op);
      } else if (op.invokeMs >= end && op.invokeMs < nextStart) {
        bucket.after.push(op);
      }
    }
  });
  const out: RunSummary = { byKind: {}, noFault: availability(client.filter((o) => !inFault.has(o))), total: availability(client) };
  for (const [kind, b] of Object.entries(byKind) as [FaultKind, { faults: FaultRecord[]; during: Op[]; after: Op[] }][]) {
    const slowest = b.faults.map((f) => ({ f, worst: worstRecovery(f) })).filter((x) => x.worst !== null);
    const finite = slowest
      .map((x) => x.worst!.ms)
      .filter((ms): ms is number => ms !== null)
      .sort((x, y) => x - y);
    const notRecovered = slowest.filter((x) => x.worst!.ms === null).length;
    const top = slowest.sort((x, y) => (y.worst!.ms ?? Infinity) - (x.worst!.ms ?? Infinity))[0];
    out.byKind[kind] = {
      faults: b.faults.length,
      failedToInject: b.faults.filter((f) => f.error !== undefined).length,
      during: availability(b.during),
      after: availability(b.after),
      recoveryMs: {
        median: finite.length ? finite[Math.floor((finite.length - 1) / 2)]! : null,
        max: notRecovered ? null : (finite.at(-1) ?? null),
        notRecovered,
        slowest: top ? { node: top.worst!.node, ms: top.worst!.ms, faultIndex: faults.indexOf(top.f) } : null,
      },
    };
  }
  return out;
}

function worstRecovery(f: FaultRecord): { node: string; ms: number | null } | null {
  const entries = Object.entries(f.recoveryMs ?? {});
  if (entries.length === 0) return null;
  const [node, ms] = entries.sort((a, b) => (b[1] ?? Infinity) - (a[1] ?? Infinity))[0]!;
  return { node, ms };
}

function availability(ops: readonly Op[]): Availability {
  const ok = ops.filter((o) => o.outcome === 'ok').length;
  const fail = ops.filter((o) => o.outcome === 'fail').length;
  return { ops: ops.length, ok: ops.length ? round(ok / ops.length) : null, answered: ops.length ? round((ok + fail) / ops.length) : null };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** The summary as a fixed-width table (one line per kind). */
export function formatSummary(s: RunSummary): string {
  const pct = (x: number | null) => (x === null ? '   -' : `${(x * 100).toFixed(0).padStart(3)}%`);
  const ms = (x: number | null) => (x === null ? '-' : `${x}`);
  const lines = ['kind              faults  during: ops   ok  answ   after: ops   ok  answ   recovery ms: median    max  slowest node'];
  for (const [kind, k] of Object.entries(s.byKind).sort()) {
    lines.push(
      `${kind.padEnd(17)} ${String(k.faults).padStart(6)}${k.failedToInject ? `(${k.failedToInject}!)` : '    '} ${String(k.during.ops).padStart(6)} ${pct(k.during.ok)} ${pct(k.during.answered)}  ${String(k.after.ops).padStart(10)} ${pct(k.after.ok)} ${pct(k.after.answered)}  ${ms(k.recoveryMs.median).padStart(18)} ${(k.recoveryMs.notRecovered ? `${k.recoveryMs.notRecovered} NOT` : ms(k.recoveryMs.max)).padStart(6)}  ${k.recoveryMs.slowest ? `${k.recoveryMs.slowest.node} (fault #${k.recoveryMs.slowest.faultIndex})` : '-'}`,
    );
  }
  lines.push(
    `no fault in place: ${s.noFault.ops} ops, ok ${pct(s.noFault.ok)}, answered ${pct(s.noFault.answered)}; all: ${s.total.ops} ops, ok ${pct(s.total.ok)}`,
  );
  return lines.join('\n');
}
