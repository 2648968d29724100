// Mutual exclusion for keys with many holds (SPEC "Many holders"), on the holders' windows (history.ts): a
// semaphore of limit N never has more than N windows open at once (over-limit), and on a key of shared and
// exclusive holds an exclusive window never overlaps another window, shared or not (shared-with-exclusive).
// A window is where the CLIENT believed it held a slot (acknowledged acquire to LOST/RELEASED or its
// conservative local deadline), so a violation here is one a user of the service would have acted on.
import type { Op } from './history.js';

type Add = (kind: 'over-limit' | 'shared-with-exclusive' | 'malformed-history', key: string, message: string, ops: number[]) => void;

/** The key's limit when its acquires ask for many holds (a limit >= 2 or shared); null for a mutex key. A
 *  key whose acquires name different limits is malformed for this check: the largest is used, so it can
 *  only under-report (the server refuses a mismatched limit anyway). */
export function groupKeyOf(ops: readonly Op[]): { limit: number } | null {
  let limit = 0;
  let many = false;
  for (const op of ops) {
    if (op.type !== 'acquire') continue;
    if ((op.limit ?? 1) > 1 || op.shared === true) many = true;
    limit = Math.max(limit, op.limit ?? 1);
  }
  return many ? { limit } : null;
}

/** Checks the windows of `key`; returns how many closed windows it looked at. */
export function checkGroupWindows(key: string, ops: readonly Op[], limit: number, add: Add): number {
  const granted = ops.filter((o) => o.type === 'acquire' && o.outcome === 'ok' && o.window !== undefined);
  for (const a of granted)
    if (a.window!.endMs === null)
      add('malformed-history', key, `acquire ${a.index} still has an open window at the end of the run`, [a.index]);
  const ws = granted.filter((a) => a.window!.endMs !== null);
  // Sweep the window edges in time order; an end at the same instant as a start comes first (touching
  // windows do not overlap: one holder's release is acknowledged before the next grant is).
  const edges = ws.flatMap((a) => [
    { atMs: a.window!.startMs, open: true, op: a },
    { atMs: a.window!.endMs!, open: false, op: a },
  ]);
  edges.sort((x, y) => x.atMs - y.atMs || Number(x.open) - Number(y.open));
  const open = new Set<Op>();
  let reported = false;
  for (const e of edges) {
    if (!e.open) {
      open.delete(e.op);
      continue;
    }
    open.add(e.op);
    if (reported) continue; // one report per key: the first moment it broke, with who was inside
    const inside = [...open];
    const names = inside.map((o) => `${o.owner} (token ${o.token}${o.shared ? ', shared' : ''}, op ${o.index})`).join(', ');
    if (limit >= 2 && inside.length > limit) {
      add(
        'over-limit',
        key,
        `${inside.length} holders of "${key}" (a semaphore of ${limit}) at ${e.atMs.toFixed(1)} ms: ${names}`,
        inside.map((o) => o.index),
      );
      reported = true;
    } else if (limit === 1 && inside.length > 1 && inside.some((o) => o.shared !== true)) {
      add(
        'shared-with-exclusive',
        key,
        `an exclusive hold of "${key}" together with another at ${e.atMs.toFixed(1)} ms: ${names}`,
        inside.map((o) => o.index),
      );
      reported = true;
    }
  }
  return ws.length;
}
