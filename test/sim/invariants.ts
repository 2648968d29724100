// Cluster-wide facts the simulator accumulates over a run, and the Raft safety properties checked
// against them (Raft paper Figure 3). Each check returns null or a violation message; the cluster
// turns a message into a SimViolation that carries the seed and the trace.
import type { ConfState, Entry, NodeId } from '../../src/raft/core/types.js';
import { entryHash } from './machine.js';

/** Key for (index, term) in number-keyed maps: terms stay far below 2^20 in a simulation. */
function key(index: number, term: number): number {
  return index * 1048576 + term;
}

export class GlobalFacts {
  /** Election Safety: the leader of every term ever observed. */
  readonly leaderOfTerm = new Map<number, NodeId>();
  /** State Machine Safety: what was applied at each index, by whichever node applied it first. */
  private committedTerm: number[] = [];
  private committedHash: number[] = [];
  private committedBy: NodeId[] = [];
  /** Digest of the state machine after applying index i (first node to get there). */
  private digestAt: (number | string)[] = [];
  /** Log Matching: for each (index, term) ever persisted, the term of the entry before it and the
   *  content hash. If these never disagree, two logs sharing (i, t) share everything up to i (by
   *  induction on i) — the Log Matching property, checked in O(1) per persisted entry. */
  private logShape = new Map<number, { prevTerm: number; hash: number; node: NodeId }>();
  /** Votes granted (non-pre-vote) per node: term -> candidate. Survives crashes: it is about the node. */
  readonly votes = new Map<NodeId, Map<number, NodeId>>();
  maxCommitted = 0;
  /** Every configuration entry ever seen in some core's log, by (index, term) — what a leader may have
   *  counted a commit on (node-checks.ts: commit-durable-quorum). */
  readonly confEntries = new Map<number, { index: number; term: number; conf: ConfState }>();
  /** Ids whose removal is committed (a configuration at or below some node's commit index lists them). */
  readonly removedCommitted = new Set<NodeId>();

  noteConfEntry(index: number, term: number, conf: ConfState): void {
    const k = key(index, term);
    if (!this.confEntries.has(k)) this.confEntries.set(k, { index, term, conf });
  }

  noteLeader(term: number, node: NodeId): string | null {
    const prev = this.leaderOfTerm.get(term);
    if (prev === undefined) {
      this.leaderOfTerm.set(term, node);
      return null;
    }
    return prev === node ? null : `election safety: ${prev} and ${node} were both leader in term ${term}`;
  }

  noteVote(node: NodeId, term: number, candidate: NodeId): string | null {
    let m = this.votes.get(node);
    if (!m) this.votes.set(node, (m = new Map()));
    const prev = m.get(term);
    if (prev === undefined) {
      m.set(term, candidate);
      return null;
    }
    return prev === candidate ? null : `one vote per term: ${node} granted its term-${term} vote to ${prev} and then to ${candidate}`;
  }

  committedTermAt(index: number): number | undefined {
    return this.committedTerm[index];
  }

  committedHashAt(index: number): number | undefined {
    return this.committedHash[index];
  }

  /** A node applied `e`: it must equal whatever any node ever applied at that index. */
  noteApplied(node: NodeId, e: Entry, hash: number): string | null {
    const t = this.committedTerm[e.index];
    if (t === undefined) {
      this.committedTerm[e.index] = e.term;
      this.committedHash[e.index] = hash;
      this.committedBy[e.index] = node;
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
      return null;
    }
    if (t !== e.term || this.committedHash[e.index] !== hash) {
      return `state machine safety: ${node} applied ${e.index}/t${e.term} (hash ${hash.toString(16)}) but ${this.committedBy[e.index]} applied ${e.index}/t${t} (hash ${this.committedHash[e.index]!.toString(16)}) — a committed entry changed`;
    }
    return null;
  }

  /** A snapshot at (index, term) was restored: its last entry must be the committed one. */
  noteSnapshotPoint(node: NodeId, index: number, term: number): string | null {
    if (index === 0) return null;
    const t = this.committedTerm[index];
    if (t === undefined) return `snapshot at ${index}/t${term} restored on ${node}, but nobody ever applied index ${index}`;
    if (t !== term)
      return `state machine safety: ${node} restored a snapshot at ${index}/t${term} but the committed entry there has term ${t}`;
    return null;
  }

  noteDigest(node: NodeId, index: number, digest: number | string): string | null {
    const d = this.digestAt[index];
    if (d === undefined) {
      this.digestAt[index] = digest;
      return null;
    }
    return d === digest
      ? null
      : `replica divergence: ${node} has state digest ${String(digest)} at applied index ${index}, another replica had ${String(d)}`;
  }

  /** Log Matching, one persisted entry at a time. */
  notePersisted(node: NodeId, e: Entry, prevTerm: number, hash: number): string | null {
    const k = key(e.index, e.term);
    const s = this.logShape.get(k);
    if (s === undefined) {
      this.logShape.set(k, { prevTerm, hash, node });
      return null;
    }
    if (s.hash !== hash) {
      return `log matching: two different entries at ${e.index}/t${e.term} (${s.node} persisted hash ${s.hash.toString(16)}, ${node} persisted ${hash.toString(16)}) — a leader created two entries with the same index in one term`;
    }
    if (s.prevTerm !== prevTerm) {
      return `log matching: ${node} persisted ${e.index}/t${e.term} after an entry of term ${prevTerm}, ${s.node} after term ${s.prevTerm} — logs share (${e.index}, ${e.term}) but differ before it`;
    }
    return null;
  }
}

export { entryHash };
