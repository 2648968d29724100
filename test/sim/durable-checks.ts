// The checks on a node's durable log (durable.ts), run each time its disk makes something durable and
// when a restarted node has loaded its state: what the modelled disk used to check on every completed
// persist, now on the bytes the real store wrote — so they hold for any order of frames and syncs the
// store chooses, and across crashes (what was durable stays durable).
import type { Entry, RestoredState } from '../../src/raft/core/types.js';
import type { SimCluster } from './cluster.js';
import { termIn, type DurableImage } from './durable.js';
import { entryHash } from './machine.js';
import type { SimNode } from './node.js';

const lastOf = (image: DurableImage): number => image.snapshot.meta.index + image.entries.length;

/** The durable log moved from `before` to `after`. */
export function checkDurableChange(sim: SimCluster, node: SimNode, before: DurableImage, after: DurableImage): void {
  const old = before.hardState;
  const hs = after.hardState;
  const snapBefore = before.snapshot.meta.index;
  const snapAfter = after.snapshot.meta.index;
  if (!before.blank && after.blank) sim.fail('durable-lost', node, 'its durable log vanished: no segment survives on its disk');
  if (snapAfter < snapBefore) sim.fail('snapshot-monotonic', node, `durable snapshot goes back from ${snapBefore} to ${snapAfter}`);
  if (hs.term < old.term) sim.fail('term-monotonic', node, `durable term goes back from ${old.term} to ${hs.term}`);
  if (hs.term === old.term && old.votedFor !== null && hs.votedFor !== old.votedFor) {
    sim.fail('one-vote-per-term', node, `durable vote in term ${hs.term} changes from ${old.votedFor} to ${hs.votedFor ?? 'nobody'}`);
  }
  if (hs.commitIndex < old.commitIndex)
    sim.fail('commit-monotonic', node, `durable commitIndex goes back from ${old.commitIndex} to ${hs.commitIndex}`);
  const first = firstChanged(before, after);
  // Entries the node durably knew committed may be rewritten only with identical ones, and never dropped.
  const committed = Math.min(lastOf(before), old.commitIndex);
  if (first <= committed && first > snapAfter) {
    const was = termIn(before, first);
    const now = termIn(after, first);
    sim.fail(
      'committed-truncated',
      node,
      now === undefined
        ? `its durable log now ends at ${lastOf(after)}, dropping entry ${first}/t${was}, but its durable commitIndex was ${old.commitIndex}`
        : `overwrites durable entry ${first}/t${was} with ${first}/t${now}, but its durable commitIndex is ${old.commitIndex}`,
    );
  }
  const s = snapAfter;
  for (let i = Math.max(first, s + 1); i <= lastOf(after); i++) {
    const e = after.entries[i - s - 1]!;
    sim.check(sim.facts.notePersisted(node.id, e, termIn(after, i - 1)!, entryHash(e)), 'log-matching', node);
  }
  if (hs.commitIndex > lastOf(after)) {
    sim.fail('commit-in-log', node, `durable commitIndex ${hs.commitIndex} is beyond the durable log (last ${lastOf(after)})`);
  }
}

/** The first index after both snapshots where the two logs differ (one lacks it, or holds another entry). */
function firstChanged(before: DurableImage, after: DurableImage): number {
  const from = Math.max(before.snapshot.meta.index, after.snapshot.meta.index) + 1;
  const to = Math.min(lastOf(before), lastOf(after));
  const b = before.snapshot.meta.index;
  const a = after.snapshot.meta.index;
  if (after.appended && a === b) {
    // One frame appended: it replaced a suffix, and the entries below it are the very same objects. The
    // frame's own entries are new objects even where they repeat what was there (a core whose write was
    // overtaken by a truncation marks nothing of it stable, and writes the unchanged prefix again — lock
    // sim seeds 6914, 9630): the first CHANGED entry is the first whose content differs.
    let i = to;
    while (i >= from && before.entries[i - b - 1] !== after.entries[i - a - 1]) i--;
    let j = i + 1;
    while (j <= to && sameEntry(before.entries[j - b - 1]!, after.entries[j - a - 1]!)) j++;
    return j;
  }
  for (let i = from; i <= to; i++) {
    if (!sameEntry(before.entries[i - b - 1]!, after.entries[i - a - 1]!)) return i;
  }
  return to + 1;
}

function sameEntry(x: Entry, y: Entry): boolean {
  return x === y || (x.term === y.term && x.kind === y.kind && entryHash(x) === entryHash(y));
}

/**
 * storage-recovery: a restarted node loads exactly the durable log. The disk only lost unsynced writes and
 * tore the one in flight (sim-disk.ts), so the store must neither refuse it as corrupt nor load anything
 * else — not a torn frame (durable.ts judges a torn write as lost), not less than was durable.
 */
export function recoveryMismatch(image: DurableImage, loaded: RestoredState | null): string | null {
  if (loaded === null)
    return image.blank ? null : `loaded nothing, but its disk holds a log (snapshot ${image.snapshot.meta.index}, last ${lastOf(image)})`;
  if (image.blank)
    return `loaded a log (snapshot ${loaded.snapshot.meta.index}, ${loaded.entries.length} entries) from a disk that holds none`;
  const a = loaded.hardState;
  const b = image.hardState;
  if (a.term !== b.term || a.votedFor !== b.votedFor || a.commitIndex !== b.commitIndex) {
    return `loaded hard state t${a.term} v=${a.votedFor ?? '-'} c${a.commitIndex}, the durable one is t${b.term} v=${b.votedFor ?? '-'} c${b.commitIndex}`;
  }
  const sa = loaded.snapshot.meta;
  const sb = image.snapshot.meta;
  if (sa.index !== sb.index || sa.term !== sb.term || !sameBytes(loaded.snapshot.data, image.snapshot.data)) {
    return `loaded snapshot ${sa.index}/t${sa.term} (${loaded.snapshot.data.length} B), the durable one is ${sb.index}/t${sb.term} (${image.snapshot.data.length} B)`;
  }
  const n = Math.max(loaded.entries.length, image.entries.length);
  for (let k = 0; k < n; k++) {
    const x = loaded.entries[k];
    const y = image.entries[k];
    if (
      x === undefined ||
      y === undefined ||
      x.index !== y.index ||
      x.term !== y.term ||
      x.kind !== y.kind ||
      entryHash(x) !== entryHash(y)
    ) {
      const at = sb.index + k + 1;
      return `loaded ${loaded.entries.length} entries after the snapshot, the durable log holds ${image.entries.length}; they differ at index ${at} (loaded ${x ? `${x.index}/t${x.term}` : 'none'}, durable ${y ? `${y.index}/t${y.term}` : 'none'})`;
    }
  }
  return null;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
