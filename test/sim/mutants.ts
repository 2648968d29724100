// Planted bugs, to test the simulator itself ("a checker that cannot fail proves nothing"). Each mutant
// wraps the real core and breaks one Raft rule — the classic bugs of the JavaScript Raft libraries
// (DESIGN.md) and a few more. sim.test.ts asserts each is caught within `maxSeeds` seeds.
//
// Most mutants only rewrite messages and Readys at the API boundary. Some reach into the core (its log,
// its progress tracker, its configuration history, the messages it has not handed out yet); they say so
// and fail loudly if the fields they need were renamed, rather than silently testing nothing.
import { changeConf, encodeConfEntry } from '../../src/raft/core/conf.js';
import type { ConfState } from '../../src/raft/core/types.js';
import type {
  ConfChange,
  ConfChangeResult,
  Entry,
  Message,
  NodeId,
  ProposeResult,
  RaftConfig,
  Ready,
  ReadState,
  RestoredState,
  Snapshot,
  SnapshotMeta,
  Status,
} from '../../src/raft/core/types.js';
import type { ProgressView } from '../../src/raft/core/progress.js';
import type { CoreInspection, CoreModule, SimCore } from './types.js';
import type { SimProfile } from './profile.js';
import { ValueWorkload, type SimWorkload } from './workload.js';

export interface Mutant {
  name: string;
  core(base: CoreModule): CoreModule;
  /** Invariants that may legitimately report this bug. */
  expect: string[];
  maxSeeds: number;
  profile?: Partial<SimProfile>;
  workload?: SimWorkload<any>;
  events?: number;
  /** Run with membership changes in the fault schedule (membership.ts). */
  membership?: boolean;
}

/** A pass-through core; mutants override the methods they break. */
class WrappedCore implements SimCore {
  readonly inner: SimCore;
  constructor(base: CoreModule, cfg: RaftConfig, restored: RestoredState) {
    this.inner = new base.Raft(cfg, restored);
  }
  tick(): void {
    this.inner.tick();
  }
  step(msg: Message): void {
    this.inner.step(msg);
  }
  leaderUnreachable(from: NodeId): void {
    this.inner.leaderUnreachable(from);
  }
  propose(data: Uint8Array): ProposeResult {
    return this.inner.propose(data);
  }
  proposeConfChange(change: ConfChange): ConfChangeResult {
    return this.inner.proposeConfChange(change);
  }
  readIndex(ctx: string): void {
    this.inner.readIndex(ctx);
  }
  transferLeadership(to: NodeId): boolean {
    return this.inner.transferLeadership(to);
  }
  hasReady(): boolean {
    return this.inner.hasReady();
  }
  ready(): Ready {
    return this.inner.ready();
  }
  advance(rd: Ready): void {
    this.inner.advance(rd);
  }
  takeDurableCommitted(maxCount?: number): Entry[] {
    return this.inner.takeDurableCommitted(maxCount);
  }
  takeMessagesNotWaitingForDisk(): Message[] {
    return this.inner.takeMessagesNotWaitingForDisk();
  }
  compact(index: number, data: Uint8Array): Snapshot | null {
    return this.inner.compact(index, data);
  }
  takeSnapshotWanted(): boolean {
    return this.inner.takeSnapshotWanted();
  }
  offerSnapshot(index: number, data: Uint8Array): boolean {
    return this.inner.offerSnapshot(index, data);
  }
  offerStream(meta: SnapshotMeta): boolean {
    return this.inner.offerStream(meta);
  }
  withdrawOffer(): void {
    this.inner.withdrawOffer();
  }
  snapshotVerified(meta: SnapshotMeta): boolean {
    return this.inner.snapshotVerified(meta);
  }
  snapshotRefused(meta: SnapshotMeta): void {
    this.inner.snapshotRefused(meta);
  }
  dropSnapshotData(): void {
    this.inner.dropSnapshotData();
  }
  status(): Status {
    return this.inner.status();
  }
  progressSnapshot(): Map<NodeId, ProgressView> {
    return this.inner.progressSnapshot();
  }
  inspect(): CoreInspection {
    return this.inner.inspect();
  }
}

function module(base: CoreModule, make: (cfg: RaftConfig, restored: RestoredState) => SimCore): CoreModule {
  return {
    defaultRaftConfig: base.defaultRaftConfig,
    Raft: function (cfg: RaftConfig, restored: RestoredState) {
      return make(cfg, restored);
    } as unknown as CoreModule['Raft'],
  };
}

interface CoreInternals {
  id: NodeId;
  log: { committed: number; lastIndex(): number; term(i: number): number | undefined };
  /** src/raft/core/tracker.ts */
  tracker: { progress: Map<NodeId, { match: number }>; voters: NodeId[]; learners: NodeId[]; quorumActive(self: NodeId): boolean };
  term: number;
  votedFor: NodeId | null;
  role: string;
}

/** What the membership mutants reach: the configuration history, the log append, and the two
 *  predicates that keep non-voters from campaigning and removed nodes from being heard. */
interface MembershipInternals {
  confs: { current(): ConfState; lastIndex(): number };
  appendEntry(kind: 'config', data: Uint8Array): Entry;
  promotable(): boolean;
  acceptsFrom(from: NodeId): boolean;
}

function membershipInternals(core: SimCore): CoreInternals & MembershipInternals {
  const c = internals(core) as CoreInternals & Partial<MembershipInternals>;
  if (
    !c.confs ||
    typeof c.confs.current !== 'function' ||
    typeof c.appendEntry !== 'function' ||
    typeof c.promotable !== 'function' ||
    typeof c.acceptsFrom !== 'function'
  ) {
    throw new Error('membership mutant needs Raft internals (confs, appendEntry, promotable, acceptsFrom): update test/sim/mutants.ts');
  }
  return c as CoreInternals & MembershipInternals;
}

/** Append a configuration entry for `change` without the checks proposeConfChange makes about WHEN a
 *  change may start (what a mutant drops); an impossible change is still refused. */
function forceConfChange(core: SimCore, change: ConfChange, refused: ConfChangeResult): ConfChangeResult {
  const c = membershipInternals(core);
  const next = changeConf(c.confs.current(), change);
  if (!next.ok) return refused;
  const e = c.appendEntry('config', encodeConfEntry({ conf: next.conf, change }));
  return { ok: true, index: e.index, term: e.term };
}

/** A core whose proposeConfChange, when the real one refuses for `reason`, does `instead`. */
function overridingRefusal(
  base: CoreModule,
  cfg: RaftConfig,
  restored: RestoredState,
  reason: 'conf-pending' | 'conf-not-ready' | 'conf-invalid',
  instead: (core: SimCore, change: ConfChange, refused: ConfChangeResult) => ConfChangeResult,
): SimCore {
  const w = new WrappedCore(base, cfg, restored);
  w.proposeConfChange = (change) => {
    const r = w.inner.proposeConfChange(change);
    return !r.ok && r.reason === reason ? instead(w.inner, change, r) : r;
  };
  return w;
}

function internals(core: SimCore): CoreInternals {
  const c = core as unknown as Partial<CoreInternals>;
  const t = c.tracker;
  if (
    !c.log ||
    typeof c.log.committed !== 'number' ||
    !t ||
    !(t.progress instanceof Map) ||
    !Array.isArray(t.voters) ||
    !Array.isArray(t.learners) ||
    typeof t.quorumActive !== 'function'
  ) {
    throw new Error(
      'mutant needs Raft internals (log.committed, tracker.progress, tracker.voters, tracker.learners, tracker.quorumActive): update test/sim/mutants.ts',
    );
  }
  return c as CoreInternals;
}

/** A leader that, on every append answer, commits the quorum-th highest match among `counted` (a
 *  majority of its voters) by itself, bypassing the core's maybeCommit — with or without the §5.4.2
 *  own-term rule. */
function countingLeader(
  base: CoreModule,
  cfg: RaftConfig,
  restored: RestoredState,
  counted: (c: CoreInternals) => NodeId[],
  ownTermOnly: boolean,
): SimCore {
  const w = new WrappedCore(base, cfg, restored);
  w.step = (m) => {
    w.inner.step(m);
    if (m.type !== 'AppendEntriesResponse') return;
    const c = internals(w.inner);
    if (c.role !== 'leader') return;
    const matches = counted(c)
      .map((id) => c.tracker.progress.get(id)?.match ?? 0)
      .sort((a, b) => b - a);
    const q = matches[Math.floor(c.tracker.voters.length / 2)]!;
    if (q > c.log.committed && (!ownTermOnly || c.log.term(q) === c.term)) c.log.committed = q;
  };
  return w;
}

export const MUTANTS: Mutant[] = [
  {
    // The leader counts its own copy toward a commit as soon as it appends, not once it is durable:
    // with the AppendEntries sent before the leader's own write (thesis §10.2.1), one follower's ack
    // then commits an entry that exists durably on one node only.
    name: 'leader counts its own unpersisted entry toward a commit',
    // The leader applies such an entry at once while its own write is in flight (takeDurableCommitted):
    // persist-before-apply sees it applied while durable on fewer than a quorum, often before the
    // commit check runs.
    expect: ['commit-durable-quorum', 'persist-before-apply'],
    maxSeeds: 100,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.propose = (data) => {
          const r = w.inner.propose(data);
          const c = internals(w.inner);
          const self = c.tracker.progress.get(c.id);
          if (r.ok && self) self.match = Math.max(self.match, c.log.lastIndex());
          return r;
        };
        return w;
      }),
  },
  {
    // The new pipeline's rule broken: a leader applies (and so answers) what it has appended while its
    // write is in flight, not only what its commit index covers — an answer before the entry is
    // durable on a quorum.
    name: 'leader applies entries before they are durable on a quorum',
    expect: ['persist-before-apply'],
    maxSeeds: 100,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.takeDurableCommitted = (maxCount) => {
          const c = internals(w.inner);
          if (w.inner.status().role !== 'leader') return w.inner.takeDurableCommitted(maxCount);
          const committed = c.log.committed;
          c.log.committed = c.log.lastIndex();
          try {
            return w.inner.takeDurableCommitted(maxCount);
          } finally {
            c.log.committed = committed;
          }
        };
        return w;
      }),
  },
  {
    // Saying during a write what the write could take back (issue 19's early messages): every
    // acknowledgement leaves while the write is in flight, also one of entries not yet on disk — a
    // crash then loses entries a leader counted toward a commit.
    name: 'acknowledgements of entries being written leave before the write',
    expect: ['persist-before-speak'],
    maxSeeds: 100,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.takeMessagesNotWaitingForDisk = () => {
          // The messages the core has not handed out yet (src/raft/core/ready.ts).
          const pending = (w.inner as unknown as { pending?: { msgs?: Message[] } }).pending;
          if (!pending || !Array.isArray(pending.msgs))
            throw new Error('mutant needs Raft internals (pending.msgs): update test/sim/mutants.ts');
          const acks = pending.msgs.filter((m) => m.type === 'AppendEntriesResponse' && m.success);
          pending.msgs = pending.msgs.filter((m) => !(m.type === 'AppendEntriesResponse' && m.success));
          return [...w.inner.takeMessagesNotWaitingForDisk(), ...acks];
        };
        return w;
      }),
  },
  {
    // CheckQuorum switched off in effect: the leader never finds its quorum inactive, so a leader cut
    // off from the majority stays leader (and keeps answering as one) forever.
    name: 'CheckQuorum never steps the leader down',
    expect: ['check-quorum'],
    maxSeeds: 150,
    profile: { raft: { checkQuorum: true } },
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        const c = internals(w.inner);
        c.tracker.quorumActive = () => true;
        return w;
      }),
  },
  {
    // Pre-Vote that raises the real term when the pre-campaign starts: an isolated node's term climbs
    // and, when it comes back, deposes a healthy leader — the disruption Pre-Vote exists to prevent.
    name: 'pre-vote raises the real term',
    expect: ['pre-vote'],
    maxSeeds: 150,
    profile: { raft: { preVote: true } },
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.tick = () => {
          const c = internals(w.inner);
          const before = c.role;
          w.inner.tick();
          if (c.role === 'pre-candidate' && before !== 'pre-candidate') {
            c.term += 1;
            c.votedFor = null;
          }
        };
        return w;
      }),
  },
  {
    // A peer-unreachable report (test/sim/reports.ts: true after crashes, false at random) that starts a
    // real election at once, as a leadership transfer would — no Pre-Vote, no leader stickiness. A false
    // report to a node cut off from the quorum then raises its term: what Raft.leaderUnreachable must
    // never do (it only shortens the wait before an ordinary, pre-voted campaign).
    name: 'a peer-unreachable report skips Pre-Vote (a real election at once)',
    expect: ['pre-vote'],
    maxSeeds: 150,
    profile: { raft: { preVote: true } },
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.leaderUnreachable = (from) => {
          const before = w.inner.status();
          w.inner.leaderUnreachable(from);
          const c = w.inner as unknown as { campaign?: (transfer: boolean) => void };
          if (typeof c.campaign !== 'function') throw new Error('mutant needs Raft.campaign(transfer): update test/sim/mutants.ts');
          if (before.role === 'follower' && before.leaderId === from && from !== before.id) c.campaign(true);
        };
        return w;
      }),
  },
  {
    // §5.4.1 election restriction removed: the candidate claims a last log term no voter can beat, so
    // voters grant votes to candidates missing committed entries.
    name: 'votes ignore the candidate log (election restriction §5.4.1)',
    expect: [
      'state-machine-safety',
      'acked-committed',
      'acked-durable',
      'linearizable-read',
      'replica-digest',
      'log-matching',
      'committed-truncated',
      'snapshot-restore',
      'workload-final',
      'core-threw',
      'applied-index',
    ],
    maxSeeds: 150,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.ready = () => {
          const rd = w.inner.ready();
          rd.messages = rd.messages.map((m) =>
            m.type === 'RequestVote' ? { ...m, lastLogTerm: m.term + 1000, lastLogIndex: m.lastLogIndex + 1000 } : m,
          );
          return rd;
        };
        return w;
      }),
  },
  {
    // §5.1 broken on the leader's side: it returns on a vote or append response that carries a higher term
    // instead of stepping down (issue 22, planted bug 2). A deposed leader then keeps leading its stale term
    // until CheckQuorum or a higher-term request reaches it; before term-learned.ts only the end-of-run
    // liveness phase noticed, in a few percent of seeds. term-learned caught it in 484 of seeds 1-1000
    // (first at seed 4).
    name: 'leader ignores a response carrying a higher term (§5.1)',
    expect: ['term-learned'],
    maxSeeds: 30,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.step = (m) => {
          const c = internals(w.inner);
          if (c.role === 'leader' && m.term > c.term && (m.type === 'AppendEntriesResponse' || m.type === 'RequestVoteResponse')) return;
          w.inner.step(m);
        };
        return w;
      }),
  },
  {
    // votedFor is not reloaded after a restart (the "not persisting votedFor" bug, seen from disk).
    name: 'votedFor forgotten on restart',
    expect: ['one-vote-per-term', 'election-safety', 'state-machine-safety', 'log-matching'],
    maxSeeds: 150,
    core: (base) =>
      module(base, (cfg, restored) => new WrappedCore(base, cfg, { ...restored, hardState: { ...restored.hardState, votedFor: null } })),
  },
  {
    // §5.3 consistency check skipped: the follower appends whatever follows prevLogIndex without
    // checking that its entry there has prevLogTerm. (Reads the follower's log term to fake a match.)
    name: 'AppendEntries accepted without the prevLogTerm check (§5.3)',
    // apply-matches-leader: since the driver applies durable committed entries as soon as they commit
    // (issue 8), a follower's forged log is often applied — and caught — before log-matching sees it.
    // commit-durable-quorum: the leader counts the forged copy (other content at that index) toward a
    // commit, and the durable copies of the committed entry are then fewer than a quorum.
    expect: [
      'log-matching',
      'apply-matches-leader',
      'commit-durable-quorum',
      'state-machine-safety',
      'committed-truncated',
      'replica-digest',
      'core-threw',
      'acked-committed',
      'snapshot-restore',
      'persist-before-apply',
      'workload-final',
    ],
    maxSeeds: 150,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.step = (m) => {
          if (m.type === 'AppendEntries' && m.entries.length > 0) {
            const have = internals(w.inner).log.term(m.prevLogIndex);
            if (have !== undefined && have !== m.prevLogTerm) {
              w.inner.step({ ...m, prevLogTerm: have });
              return;
            }
          }
          w.inner.step(m);
        };
        return w;
      }),
  },
  {
    // Followers acknowledge appends before they are durable (the Ready's entries are never written).
    name: 'follower acknowledges entries before persisting them',
    expect: ['persist-before-speak', 'persist-before-apply', 'commit-in-log', 'log-contiguity'],
    maxSeeds: 20,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.ready = () => {
          const rd = w.inner.ready();
          if (w.inner.status().role !== 'leader' && rd.entries.length > 0) return { ...rd, entries: [] };
          return rd;
        };
        return w;
      }),
  },
  {
    // A leader answers ReadIndex from its own commit index without confirming it is still leader
    // (no heartbeat quorum round): a deposed leader behind a partition serves stale reads.
    name: 'ReadIndex served without confirming leadership',
    expect: ['linearizable-read', 'read-index-fresh'],
    maxSeeds: 300,
    profile: { raft: { checkQuorum: false }, faultMeanMs: 150 },
    workload: new ValueWorkload(0.5),
    events: 4000,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        let local: ReadState[] = [];
        w.readIndex = (ctx) => {
          const st = w.inner.status();
          if (st.role === 'leader') local.push({ ctx, index: st.commitIndex });
          else w.inner.readIndex(ctx);
        };
        w.hasReady = () => local.length > 0 || w.inner.hasReady();
        w.ready = () => {
          const rd = w.inner.ready();
          if (local.length > 0) {
            rd.readStates = [...rd.readStates, ...local];
            local = [];
          }
          return rd;
        };
        return w;
      }),
  },
  {
    // skiff/liferaft: commitIndex = leaderCommit without the min against the last new entry — a
    // follower "commits" a stale tail it has not been shown to share with the leader. (Reaches into
    // the core's log to emulate the bad assignment.)
    name: 'follower sets commitIndex = leaderCommit (no min with last new entry)',
    // Rare by the core's design: heartbeats carry min(match, commit) and fast backtracking lands on
    // the first conflicting entry, so a matching AppendEntries that ends before a stale tail while
    // carrying a higher leaderCommit needs an unusual interleaving (~1 seed in 300 at 5,000 events).
    expect: [
      'commit-durable-quorum',
      'apply-matches-leader',
      'state-machine-safety',
      'replica-digest',
      'committed-truncated',
      'core-threw',
      'acked-committed',
      'snapshot-restore',
      'commit-in-log',
      'persist-before-apply',
    ],
    maxSeeds: 3000,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        w.step = (m) => {
          w.inner.step(m);
          if (m.type !== 'AppendEntries') return;
          const c = internals(w.inner);
          if (c.role !== 'follower' || m.term !== c.term || c.log.term(m.prevLogIndex) !== m.prevLogTerm) return;
          const target = Math.min(m.leaderCommit, c.log.lastIndex());
          if (target > c.log.committed) c.log.committed = target;
        };
        return w;
      }),
  },
  {
    // §5.4.2 (Figure 8): a leader commits an entry of an earlier term by counting replicas.
    name: 'leader commits earlier-term entries by counting replicas (Figure 8)',
    expect: [
      'commit-rule',
      'commit-durable-quorum',
      'state-machine-safety',
      'replica-digest',
      'committed-truncated',
      'acked-committed',
      'acked-durable',
      'snapshot-restore',
      'workload-final',
      'linearizable-read',
      'applied-index',
      'commit-in-log',
      'persist-before-apply',
    ],
    maxSeeds: 100,
    core: (base) => module(base, (cfg, restored) => countingLeader(base, cfg, restored, (c) => c.tracker.voters, false)),
  },
  // ---- runtime membership (src/raft/core/conf.ts; the nemesis is membership.ts)
  {
    // (a) A learner's copy counted toward a commit: the leader takes the quorum-th highest match over
    // voters AND learners (still only for an entry of its own term, so §5.4.2 holds and only the
    // learner rule is broken).
    name: 'membership (a): a learner counted toward the commit quorum',
    expect: [
      'commit-durable-quorum',
      'state-machine-safety',
      'acked-durable',
      'workload-final',
      'replica-digest',
      'linearizable-read',
      'committed-truncated',
      'snapshot-restore',
    ],
    maxSeeds: 150,
    membership: true,
    core: (base) =>
      module(base, (cfg, restored) => countingLeader(base, cfg, restored, (c) => [...c.tracker.voters, ...c.tracker.learners], true)),
  },
  {
    // (b) Two changes in flight: the "one at a time" check dropped — a change is appended while the
    // previous configuration entry is still uncommitted.
    name: 'membership (b): a second change while one is pending',
    // With conf-one-pending switched off (by hand), removed-leader caught it in 2 of 100 seeds.
    expect: ['conf-one-pending', 'removed-leader', 'election-safety', 'state-machine-safety', 'commit-durable-quorum'],
    maxSeeds: 100,
    membership: true,
    core: (base) => module(base, (cfg, restored) => overridingRefusal(base, cfg, restored, 'conf-pending', forceConfChange)),
  },
  {
    // (c) The 2015 single-server bug: a new leader starts a change before it committed an entry of its
    // own term (one-at-a-time still holds against ITS commit index).
    name: 'membership (c): a change before the leader committed an entry of its term',
    // Only the rule itself catches it: with conf-after-term-commit switched off (by hand) no deeper
    // invariant failed in 100 seeds (the unsafe interleaving needs an uncommitted change of the previous
    // leader AND a disjoint majority to form).
    expect: [
      'conf-after-term-commit',
      'conf-one-pending',
      'removed-leader',
      'election-safety',
      'state-machine-safety',
      'commit-durable-quorum',
    ],
    maxSeeds: 100,
    membership: true,
    core: (base) =>
      module(base, (cfg, restored) =>
        overridingRefusal(base, cfg, restored, 'conf-not-ready', (core, change, r) => {
          const c = membershipInternals(core);
          if (c.confs.lastIndex() > c.log.committed) return { ok: false, reason: 'conf-pending', leaderId: c.id, message: 'pending' };
          return forceConfChange(core, change, r);
        }),
      ),
  },
  {
    // Node ids reused: an add of an id removed earlier is accepted (changeConf's check skipped), so a
    // returning old node would be taken for a new one with the same name.
    name: 'membership: a removed id may be added again',
    expect: ['id-reused'],
    maxSeeds: 150,
    membership: true,
    core: (base) =>
      module(base, (cfg, restored) =>
        overridingRefusal(base, cfg, restored, 'conf-invalid', (core, change, r) => {
          const c = membershipInternals(core);
          const conf = c.confs.current();
          if (change.type !== 'add' || !conf.removed.includes(change.id)) return r;
          const next: ConfState = {
            ...conf,
            voters: [...conf.voters],
            learners: [...conf.learners],
            addresses: { ...conf.addresses, [change.id]: change.address },
          };
          (change.learner ? next.learners : next.voters).push(change.id);
          const e = c.appendEntry('config', encodeConfEntry({ conf: next, change }));
          return { ok: true, index: e.index, term: e.term };
        }),
      ),
  },
  {
    // (d) A removed node still allowed to campaign: promotable() ignores membership (any node without a
    // pending snapshot campaigns: learners, joining nodes, removed nodes) and acceptsFrom() lets every
    // sender through (a removed node's messages are heard).
    name: 'membership (d): a removed node may still campaign and is heard',
    // With non-voter-campaign and removed-disturbs switched off (by hand), removed-leader caught it in 5
    // of 100 seeds.
    expect: ['non-voter-campaign', 'removed-leader', 'removed-disturbs', 'election-safety', 'state-machine-safety', 'pre-vote'],
    maxSeeds: 100,
    membership: true,
    core: (base) =>
      module(base, (cfg, restored) => {
        const w = new WrappedCore(base, cfg, restored);
        const c = membershipInternals(w.inner);
        const log = c.log as unknown as { pendingSnapshot: unknown };
        c.promotable = () => log.pendingSnapshot === null;
        c.acceptsFrom = () => true;
        return w;
      }),
  },
];
