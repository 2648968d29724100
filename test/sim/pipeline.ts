// The driver loop of one simulated node, exactly as the Ready contract says (types.ts): persist the
// snapshot, entries and hard state in one atomic write that takes disk time; only then send the
// messages; then restore the snapshot and apply committed entries; then advance. Messages and ticks
// keep arriving while a write is in flight (the core must cope, as with any async driver); a crash in
// that window loses the write. Each step checks the invariants it can see: persist-before-speak, log
// matching on the durable log, committed entries never rewritten, apply order and content.
import type { Message, Ready } from '../../src/raft/core/types.js';
import type { SimCluster } from './cluster.js';
import { entryHash } from './machine.js';
import type { SimNode } from './node.js';

export class ReadyPipeline {
  constructor(private readonly sim: SimCluster) {}

  /** After anything touched the core: hand its Ready to the disk, or finish it right away. */
  pump(node: SimNode): void {
    let rounds = 0;
    while (node.up && node.inflight === null && node.raft.hasReady()) {
      if (++rounds > 1000) this.sim.fail('ready-progress', node, 'hasReady() is still true after 1000 consecutive Ready/advance rounds');
      const rd = node.raft.ready();
      if (rd.softState) {
        this.sim.trace.add(this.sim.now, node.id, 'soft', `${rd.softState.role} t${rd.softState.term} leader=${rd.softState.leaderId ?? '-'}`);
        if (rd.softState.role === 'leader') this.sim.leaderProposals(node, 'elected');
      }
      const needsDisk = rd.hardState !== null || rd.entries.length > 0 || rd.snapshot !== null;
      if (!needsDisk) {
        this.finishReady(node, rd);
        continue;
      }
      node.inflight = rd;
      const p = this.sim.profile;
      const latency = p.diskMinMs + this.sim.diskRng.float() * (p.diskMaxMs - p.diskMinMs);
      this.sim.schedule(latency, { kind: 'persisted', node: node.idx, inc: node.incarnation });
      if (node.arm && node.arm.point === 'mid-persist' && this.armMatches(node, rd)) {
        // Crash while the write is in flight: the whole batch is lost (never fsynced).
        this.sim.schedule(latency * 0.9 * this.sim.diskRng.float(), { kind: 'crash', node: node.idx, inc: node.incarnation, why: `armed: mid-persist of ${node.arm.filter}` });
        node.arm = null;
        this.sim.stats.armedCrashes++;
      }
    }
  }

  private armMatches(node: SimNode, rd: Ready): boolean {
    const arm = node.arm!;
    if (arm.filter === 'any') return true;
    if (arm.filter === 'entries') return rd.entries.length > 0;
    const hs = rd.hardState;
    const d = node.durable.hardState;
    return hs !== null && hs.votedFor !== null && (hs.term !== d.term || hs.votedFor !== d.votedFor);
  }

  /** The Ready's write completed: it is durable now. */
  persisted(node: SimNode): void {
    const rd = node.inflight!;
    node.inflight = null;
    this.sim.stats.persists++;
    this.sim.trace.add(this.sim.now, node.id, 'persisted', rd);
    this.writeDurable(node, rd);
    if (node.arm && node.arm.point === 'after-persist' && this.armMatches(node, rd)) {
      this.sim.stats.armedCrashes++;
      this.sim.crash(node.idx, `armed: after persisting ${node.arm.filter}, before send`);
      return;
    }
    this.finishReady(node, rd);
  }

  /** Steps 2-4 of a Ready: send, apply (snapshot first), advance. */
  private finishReady(node: SimNode, rd: Ready): void {
    const d = node.durable;
    for (const m of rd.messages) {
      this.checkSpeech(node, m);
      this.sim.send(node.idx, m);
    }
    if (node.arm && node.arm.point === 'after-send' && rd.messages.length > 0 && this.armMatches(node, rd)) {
      this.sim.stats.armedCrashes++;
      this.sim.crash(node.idx, `armed: after sending (${node.arm.filter}), before apply`);
      return;
    }
    if (rd.snapshot) {
      const s = rd.snapshot.meta;
      if (s.index < node.applied) this.sim.fail('applied-monotonic', node, `restoring snapshot ${s.index}/t${s.term} would move applied back from ${node.applied}`);
      node.sm.restore(rd.snapshot.data);
      node.applied = s.index;
      this.sim.stats.snapshotsInstalled++;
      this.sim.trace.add(this.sim.now, node.id, 'restore-snapshot', `${s.index}/t${s.term}`);
      this.sim.check(this.sim.facts.noteSnapshotPoint(node.id, s.index, s.term), 'snapshot-restore', node);
      this.sim.check(this.sim.facts.noteDigest(node.id, s.index, node.sm.digest()), 'replica-digest', node);
      this.sim.clients.snapshotRestored(node, s.index);
    }
    const wl = this.sim.workload;
    // The leader of this node's term, if it is still up in that term: every entry this node applies
    // must be on that leader's disk exactly (it told us the entry is committed, so it counted itself
    // for it, and a leader never rewrites its own log within its term).
    let leader: SimNode | null = null;
    if (rd.committedEntries.length > 0) {
      const term = node.raft.status().term;
      const lid = this.sim.facts.leaderOfTerm.get(term);
      const l = lid === undefined ? null : this.sim.nodes[this.sim.indexOf(lid)]!;
      if (l !== null && l !== node && l.up && l.raft.status().term === term) leader = l;
    }
    for (const e of rd.committedEntries) {
      if (e.index <= node.applied) continue; // covered by a snapshot restored in this same Ready
      if (e.index !== node.applied + 1) this.sim.fail('apply-order', node, `applied ${node.applied} then got entry ${e.index}/t${e.term}`);
      if (e.index > d.lastIndex() || (e.index > d.snapIndex && d.term(e.index) !== e.term)) {
        this.sim.fail('persist-before-apply', node, `applying ${e.index}/t${e.term} which is not in the durable log (durable last ${d.lastIndex()}, term there ${d.term(e.index)})`);
      }
      const hash = entryHash(e);
      if (leader !== null) {
        const le = leader.durable.entry(e.index);
        if (le !== undefined && (le.term !== e.term || entryHash(le) !== hash)) {
          this.sim.fail('apply-matches-leader', node, `applies ${e.index}/t${e.term}, but its leader ${leader.id} holds ${e.index}/t${le.term}${le.term === e.term ? ' with different data' : ''} — committed beyond what it shares with the leader`);
        }
      }
      this.sim.check(this.sim.facts.noteApplied(node.id, e, hash), 'state-machine-safety', node);
      const result = node.sm.apply(e);
      node.applied = e.index;
      this.sim.check(this.sim.facts.noteDigest(node.id, e.index, node.sm.digest()), 'replica-digest', node);
      if (wl.checkApply) this.sim.check(wl.checkApply(node.id, e, result, node.sm), 'workload-apply', node);
      if (node.waiters.size > 0) this.sim.clients.entryApplied(node, e, hash, result);
    }
    for (const rs of rd.readStates) this.sim.clients.readState(node, rs.ctx, rs.index);
    for (const rf of rd.readFailures) this.sim.clients.readFailure(node, rf.ctx, rf.reason);
    if (node.servable.length > 0) this.sim.clients.serveReads(node);
    node.raft.advance(rd);
    if (rd.committedEntries.length > 0 || rd.snapshot) {
      // Behind would mean entries handed out twice. (Ahead is allowed transiently: a newer snapshot
      // that superseded the one just persisted is already counted; it arrives in the next Ready, and a
      // gap without it is caught as apply-order.)
      const st = node.raft.status();
      if (st.appliedIndex < node.applied) this.sim.fail('applied-index', node, `core reports appliedIndex ${st.appliedIndex} after advance, the application applied ${node.applied}`);
    }
    this.maybeCompact(node);
  }

  /** Persist before you speak (Raft Figure 2): every message must be backed by durable state. */
  private checkSpeech(node: SimNode, m: Message): void {
    const hs = node.durable.hardState;
    const prospective = (m.type === 'RequestVote' || m.type === 'RequestVoteResponse') && m.preVote;
    if (!prospective && m.term > hs.term) {
      this.sim.fail('persist-before-speak', node, `sends ${m.type} in term ${m.term} while its durable term is ${hs.term}`);
    }
    if (m.type === 'RequestVoteResponse' && m.granted && !m.preVote) {
      // Safe when the durable state records this vote, or has moved past that term altogether (the
      // grant and a newer term can land in one atomic write): either way it can never vote again in it.
      if (hs.term === m.term && hs.votedFor !== m.to) {
        this.sim.fail('persist-before-speak', node, `grants its term-${m.term} vote to ${m.to} but durably voted ${hs.votedFor ?? 'nobody'} in term ${hs.term}`);
      }
      this.sim.check(this.sim.facts.noteVote(node.id, m.term, m.to), 'one-vote-per-term', node);
    }
    // Within the ack's term the node's log only grows past what that leader sent, so the durable log
    // must cover the ack. (An ack queued in an older term may leave after a newer leader legitimately
    // truncated those entries: they were durable when acknowledged, and the old term's leader is the
    // only one that can count the ack.)
    if (m.type === 'AppendEntriesResponse' && m.success && m.term === hs.term && m.matchIndex > node.durable.lastIndex()) {
      this.sim.fail('persist-before-speak', node, `acknowledges entries up to ${m.matchIndex} but only ${node.durable.lastIndex()} are durable`);
    }
  }

  /** Apply one Ready's batch to the modelled disk, checking the log invariants on the way. */
  private writeDurable(node: SimNode, rd: Ready): void {
    const d = node.durable;
    const old = d.hardState;
    if (rd.snapshot) {
      const s = rd.snapshot.meta;
      if (s.index < d.snapIndex) this.sim.fail('snapshot-monotonic', node, `persists snapshot ${s.index} over newer durable snapshot ${d.snapIndex}`);
      d.installSnapshot(rd.snapshot);
    }
    if (rd.entries.length > 0) {
      const first = rd.entries[0]!.index;
      if (first > d.lastIndex() + 1) this.sim.fail('log-contiguity', node, `persists entries from ${first} but the durable log ends at ${d.lastIndex()}`);
      let k = 0;
      while (k < rd.entries.length && rd.entries[k]!.index <= d.snapIndex) k++;
      if (k < rd.entries.length) {
        const from = rd.entries[k]!.index;
        // Entries the node already knew committed may be rewritten only with identical ones.
        const upTo = Math.min(d.lastIndex(), old.commitIndex);
        for (let i = from; i <= upTo; i++) {
          const e = rd.entries[k + (i - from)];
          if (e !== undefined && d.term(i) !== e.term) {
            this.sim.fail('committed-truncated', node, `overwrites durable entry ${i}/t${d.term(i)} with ${i}/t${e.term}, but its durable commitIndex is ${old.commitIndex}`);
          }
        }
        d.truncateFrom(from);
        for (; k < rd.entries.length; k++) {
          const e = rd.entries[k]!;
          const prevTerm = d.term(e.index - 1);
          if (prevTerm === undefined) this.sim.fail('log-contiguity', node, `entry ${e.index} has no predecessor in the durable log`);
          this.sim.check(this.sim.facts.notePersisted(node.id, e, prevTerm!, entryHash(e)), 'log-matching', node);
          // Durable entries are immutable; a core that mutates an entry after handing it out throws here.
          d.append(Object.isFrozen(e) ? e : Object.freeze(e));
        }
      }
    }
    if (rd.hardState) {
      const hs = rd.hardState;
      if (hs.term < old.term) this.sim.fail('term-monotonic', node, `durable term goes back from ${old.term} to ${hs.term}`);
      if (hs.term === old.term && old.votedFor !== null && hs.votedFor !== old.votedFor) {
        this.sim.fail('one-vote-per-term', node, `durable vote in term ${hs.term} changes from ${old.votedFor} to ${hs.votedFor ?? 'nobody'}`);
      }
      if (hs.commitIndex < old.commitIndex) this.sim.fail('commit-monotonic', node, `durable commitIndex goes back from ${old.commitIndex} to ${hs.commitIndex}`);
      d.hardState = { ...hs };
    }
    if (d.hardState.commitIndex > d.lastIndex()) {
      this.sim.fail('commit-in-log', node, `durable commitIndex ${d.hardState.commitIndex} is beyond the durable log (last ${d.lastIndex()})`);
    }
  }

  private maybeCompact(node: SimNode): void {
    if (!node.up || node.inflight !== null) return;
    if (node.applied - node.durable.snapIndex < this.sim.profile.snapshotEvery) return;
    const data = node.sm.snapshot();
    const snap = node.raft.compact(node.applied, data);
    // null: already compacted past `applied` (a snapshot from the leader is pending in the next Ready,
    // which persists it) — nothing to store here.
    if (snap === null) return;
    if (snap.meta.index < node.applied) this.sim.fail('compact', node, `compact(${node.applied}) returned an older snapshot at ${snap.meta.index}`);
    const committedTerm = this.sim.facts.committedTermAt(snap.meta.index);
    if (committedTerm !== undefined && snap.meta.term !== committedTerm) {
      this.sim.fail('compact', node, `snapshot at ${snap.meta.index} has term ${snap.meta.term}, committed entry has term ${committedTerm}`);
    }
    // A newer snapshot than asked for means "already compacted past that" (one received from the
    // leader is pending in the next Ready, which persists it): nothing to store here.
    if (snap.meta.index > node.applied) return;
    node.durable.compact(snap);
    this.sim.stats.compactions++;
    this.sim.trace.add(this.sim.now, node.id, 'compact', `${snap.meta.index}/t${snap.meta.term} ${data.length}B`);
  }

  /** Per-event checks on the node the event touched. */
  afterNodeEvent(node: SimNode): void {
    if (!node.up) return;
    this.pump(node);
    if (!node.up) return;
    const st = node.raft.status();
    if (st.term < node.lastTerm) this.sim.fail('term-monotonic', node, `term went back from ${node.lastTerm} to ${st.term}`);
    if (st.commitIndex < node.lastCommit) this.sim.fail('commit-monotonic', node, `commitIndex went back from ${node.lastCommit} to ${st.commitIndex}`);
    if (st.role === 'leader' && st.commitIndex > node.lastCommit && st.term === node.lastTerm) {
      // §5.4.2: a leader commits by counting replicas only entries of its own term (Figure 8), and it
      // counts itself only for entries on its own disk.
      const t = node.durable.term(st.commitIndex);
      if (t !== st.term) {
        this.sim.fail('commit-rule', node, `leader of term ${st.term} advanced its commitIndex to ${st.commitIndex}, whose entry ${t === undefined ? 'is not in its durable log' : `is from term ${t}`} (§5.4.2)`);
      }
    }
    node.lastTerm = st.term;
    node.lastCommit = st.commitIndex;
    if (st.term > this.sim.stats.maxTerm) this.sim.stats.maxTerm = st.term;
    if (st.role === 'leader') this.sim.check(this.sim.facts.noteLeader(st.term, node.id), 'election-safety', node);
  }
}
