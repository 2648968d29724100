// Cluster membership as data (Raft thesis ch. 4). PURE.
//
// Why single-server changes and not joint consensus: each change adds or removes ONE voter, so any
// majority of the old voter set and any majority of the new one share a server (thesis §4.1) and no two
// leaders can be elected in one term across the change. That needs two extra rules, both enforced by the
// core (raft.ts, proposeConfChange):
//   1. one change at a time — a new change is refused while the last configuration entry in the leader's
//      log is not committed;
//   2. a new leader starts no change before it has committed an entry of its own term (the bug Ongaro
//      reported on raft-dev in 2015: without it, a leader can start a change while an uncommitted change
//      of an earlier leader sits in its log, and two disjoint majorities become possible).
// Learners (non-voting members) receive the log but neither vote nor count toward any quorum, so adding
// or removing one never moves a majority; a new server joins as a learner, catches up, and only then is
// promoted — so it never makes the cluster wait for it while it copies the log (thesis §4.2.1).
//
// A configuration entry carries the WHOLE resulting configuration, not just the delta: a node that
// catches up from the log (a joining node never saw the bootstrap snapshot at index 0) learns the full
// membership, the peer addresses and the cluster id from the latest configuration entry alone.
// Every node uses the latest configuration in its log, committed or not ("applied when appended",
// thesis §4.1); when a configuration entry is truncated away, the node falls back to the one before.
import { MalformedConfError } from './errors.js';
import type { ConfChange, ConfState, NodeId } from './types.js';

export function emptyConf(clusterId = ''): ConfState {
  return { clusterId, voters: [], learners: [], addresses: {}, removed: [] };
}

export function copyConf(c: ConfState): ConfState {
  return {
    clusterId: c.clusterId,
    voters: [...c.voters],
    learners: [...c.learners],
    addresses: { ...c.addresses },
    removed: [...c.removed],
  };
}

export function isMember(c: ConfState, id: NodeId): boolean {
  return c.voters.includes(id) || c.learners.includes(id);
}

export function sameConf(a: ConfState, b: ConfState): boolean {
  const sameList = (x: NodeId[], y: NodeId[]) => x.length === y.length && x.every((v, i) => v === y[i]);
  const ak = Object.keys(a.addresses).sort();
  const bk = Object.keys(b.addresses).sort();
  return (
    a.clusterId === b.clusterId &&
    sameList(a.voters, b.voters) &&
    sameList(a.learners, b.learners) &&
    sameList(a.removed, b.removed) &&
    sameList(ak, bk) &&
    ak.every((k) => a.addresses[k] === b.addresses[k])
  );
}

/** The configuration after `change`, or why the change is impossible. */
export function changeConf(c: ConfState, change: ConfChange): { ok: true; conf: ConfState } | { ok: false; reason: string } {
  const next = copyConf(c);
  switch (change.type) {
    case 'add':
      if (isMember(c, change.id)) return { ok: false, reason: `${change.id} is already a member` };
      if (c.removed.includes(change.id)) {
        return { ok: false, reason: `${change.id} was removed earlier and node ids are never reused; add it under a new id` };
      }
      if (change.address === '') return { ok: false, reason: `${change.id}: an address is required` };
      (change.learner ? next.learners : next.voters).push(change.id);
      next.addresses[change.id] = change.address;
      break;
    case 'promote':
      if (c.voters.includes(change.id)) return { ok: false, reason: `${change.id} is already a voter` };
      if (!c.learners.includes(change.id)) return { ok: false, reason: `${change.id} is not a member` };
      next.learners = next.learners.filter((id) => id !== change.id);
      next.voters.push(change.id);
      break;
    case 'remove':
      if (!isMember(c, change.id)) return { ok: false, reason: `${change.id} is not a member` };
      if (c.voters.length === 1 && c.voters[0] === change.id) return { ok: false, reason: `${change.id} is the last voter` };
      next.voters = next.voters.filter((id) => id !== change.id);
      next.learners = next.learners.filter((id) => id !== change.id);
      delete next.addresses[change.id];
      next.removed.push(change.id);
      break;
  }
  next.voters.sort();
  next.learners.sort();
  return { ok: true, conf: next };
}

// ---- entry encoding: JSON is enough for a few rare, small entries, and readable in a log dump.

export interface ConfEntry {
  conf: ConfState;
  change: ConfChange;
}

export function encodeConfEntry(e: ConfEntry): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(e));
}

/** Throws on a malformed entry: a configuration entry we cannot read would leave us with no membership. */
export function decodeConfEntry(data: Uint8Array): ConfEntry {
  const v = JSON.parse(new TextDecoder().decode(data)) as unknown;
  if (typeof v !== 'object' || v === null) throw new MalformedConfError('malformed configuration entry: not an object');
  const o = v as Record<string, unknown>;
  const change = o['change'] as Record<string, unknown> | undefined;
  if (typeof change !== 'object' || change === null) throw new MalformedConfError('malformed configuration entry: no change');
  const type = change['type'];
  if (type !== 'add' && type !== 'promote' && type !== 'remove') throw new MalformedConfError('malformed configuration entry: change type');
  if (typeof change['id'] !== 'string') throw new MalformedConfError('malformed configuration entry: change id');
  return { conf: confFromJson(o['conf']), change: change as unknown as ConfChange };
}

/** A configuration as JSON bytes (snapshot metadata on disk). */
export function encodeConf(c: ConfState): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(c));
}

export function decodeConf(data: Uint8Array): ConfState {
  return confFromJson(JSON.parse(new TextDecoder().decode(data)) as unknown);
}

function confFromJson(v: unknown): ConfState {
  const bad = (what: string): never => {
    throw new MalformedConfError(`malformed configuration: ${what}`);
  };
  if (typeof v !== 'object' || v === null) bad('not an object');
  const conf = v as Record<string, unknown>;
  const ids = (x: unknown, f: string): NodeId[] =>
    Array.isArray(x) && x.every((s) => typeof s === 'string') ? [...(x as string[])] : bad(f);
  const addrs = conf['addresses'];
  if (typeof addrs !== 'object' || addrs === null) bad('addresses');
  const addresses: Record<NodeId, string> = {};
  for (const [k, a] of Object.entries(addrs as Record<string, unknown>)) {
    if (typeof a !== 'string') bad(`address of ${k}`);
    addresses[k] = a as string;
  }
  if (typeof conf['clusterId'] !== 'string') bad('clusterId');
  return {
    clusterId: conf['clusterId'] as string,
    voters: ids(conf['voters'], 'voters'),
    learners: ids(conf['learners'], 'learners'),
    addresses,
    removed: ids(conf['removed'], 'removed'),
  };
}

/**
 * The configurations in one node's log: the snapshot's (the base) and one per configuration entry after
 * it. `current()` is what the node acts on; `at(i)` is what a snapshot taken at index i must record.
 */
export class ConfHistory {
  private base: { index: number; conf: ConfState };
  private entries: { index: number; conf: ConfState }[] = [];

  constructor(snapshotIndex: number, snapshotConf: ConfState) {
    this.base = { index: snapshotIndex, conf: snapshotConf };
  }

  current(): ConfState {
    return (this.entries[this.entries.length - 1] ?? this.base).conf;
  }

  /** Index of the latest configuration entry (the snapshot's index when none follows it). */
  lastIndex(): number {
    return (this.entries[this.entries.length - 1] ?? this.base).index;
  }

  at(index: number): ConfState {
    for (let k = this.entries.length - 1; k >= 0; k--) if (this.entries[k]!.index <= index) return this.entries[k]!.conf;
    return this.base.conf;
  }

  /** The snapshot's configuration, then each configuration entry's, oldest first (not copies). */
  all(): readonly { readonly index: number; readonly conf: ConfState }[] {
    return [this.base, ...this.entries];
  }

  appended(index: number, conf: ConfState): void {
    this.entries.push({ index, conf });
  }

  /** Entries from `index` on were truncated (a conflicting suffix replaced by the leader). */
  truncatedFrom(index: number): void {
    while (this.entries.length > 0 && this.entries[this.entries.length - 1]!.index >= index) this.entries.pop();
  }

  /** The log now starts after a snapshot at `index` carrying `conf`. */
  rebase(index: number, conf: ConfState, keepLaterEntries: boolean): void {
    this.base = { index, conf };
    this.entries = keepLaterEntries ? this.entries.filter((e) => e.index > index) : [];
  }
}
