// A tiny synchronous in-memory network for Raft unit tests (etcd's raft_test.go "network" in spirit):
// deliver messages in order, optionally dropping links; persistence is instantaneous.
//
// Every Ready is checked against "persist before you speak" (Raft Figure 2, DESIGN.md): the harness
// persists the Ready first and then verifies that each outgoing message is covered by durable state;
// a violation throws, so every test driven through drain() also checks that rule.
import { Raft, defaultRaftConfig } from '../../../src/raft/core/raft.js';
import type {
  AppendEntries,
  Entry,
  HardState,
  Message,
  NodeId,
  RaftConfig,
  ReadFailure,
  Ready,
  Snapshot,
} from '../../../src/raft/core/types.js';
import { bootstrapSnapshot, emptyHardState } from '../../../src/raft/core/types.js';
import { SimRng } from '../../sim/rng.js';

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

/** Build entries from a list of terms: terms[i] is the term of index start+i. */
export function entriesOfTerms(terms: number[], start = 1): Entry[] {
  return terms.map((term, i) => ({ index: start + i, term, kind: 'normal' as const, data: enc(`e${start + i}t${term}`) }));
}

export interface Durable {
  hardState: HardState;
  snapshot: Snapshot;
  entries: Entry[];
}

function lastDurableIndex(d: Durable): number {
  const last = d.entries[d.entries.length - 1];
  return last ? last.index : d.snapshot.meta.index;
}

function isPreVote(m: Message): boolean {
  return (m.type === 'RequestVote' || m.type === 'RequestVoteResponse') && m.preVote;
}

/**
 * Messages that leave `self` while the state they depend on is not durable yet. The harness persists a
 * whole Ready before "sending" it, so a violation means the core emitted a message in an earlier Ready
 * than the state it depends on.
 *
 * A message of an older term than the durable one is exempt: the node has durably moved past that term
 * (e.g. it campaigned in term T and saw T+1 before the Ready was taken), so it can never act in that term
 * again and a vote or acknowledgement given in it cannot be contradicted after a crash.
 */
export function persistBeforeSendViolations(self: NodeId, durable: Durable, messages: Message[]): string[] {
  const out: string[] = [];
  const hs = durable.hardState;
  for (const m of messages) {
    if (!isPreVote(m) && hs.term < m.term) {
      out.push(`${self}: ${m.type} to ${m.to} carries term ${m.term} but durable term is ${hs.term}`);
    }
    if (hs.term !== m.term) continue;
    if (m.type === 'RequestVote' && !m.preVote && hs.votedFor !== self) {
      out.push(`${self}: RequestVote for term ${m.term} sent before its own vote was durable (${JSON.stringify(hs)})`);
    }
    if (m.type === 'RequestVoteResponse' && !m.preVote && m.granted && hs.votedFor !== m.to) {
      out.push(`${self}: vote for ${m.to} in term ${m.term} sent before votedFor was durable (${JSON.stringify(hs)})`);
    }
    if (m.type === 'AppendEntriesResponse' && m.success && lastDurableIndex(durable) < m.matchIndex) {
      out.push(`${self}: acknowledged index ${m.matchIndex} but only ${lastDurableIndex(durable)} is durable`);
    }
  }
  return out;
}

export class TestNode {
  raft: Raft;
  durable: Durable;
  applied: Entry[] = [];
  reads: { ctx: string; index: number }[] = [];
  readFailures: ReadFailure[] = [];
  /** Every Ready this node produced, in order (tests inspect and may clear it). */
  readys: Ready[] = [];
  /** Snapshot data the state machine was last restored from (by an InstallSnapshot). */
  restoredFrom: Snapshot | null = null;
  constructor(
    readonly id: NodeId,
    voters: NodeId[],
    readonly tweak?: (c: RaftConfig) => void,
    readonly seed = 1,
  ) {
    this.durable = { hardState: emptyHardState(), snapshot: bootstrapSnapshot(voters), entries: [] };
    this.raft = this.make(seed);
  }
  /** `appliedIndex`: the state machine holds the entries up to it already (a store of its own). */
  make(seed: number, appliedIndex?: number): Raft {
    const cfg = defaultRaftConfig(this.id, new SimRng(seed * 7919 + this.id.charCodeAt(this.id.length - 1)));
    this.tweak?.(cfg);
    return new Raft(cfg, {
      hardState: { ...this.durable.hardState },
      snapshot: this.durable.snapshot,
      entries: [...this.durable.entries],
      ...(appliedIndex === undefined ? {} : { appliedIndex }),
    });
  }
  /** Crash and restart from durable state. */
  restart(seed = 2): void {
    this.raft = this.make(seed);
    this.applied = this.applied.filter((e) => e.index <= this.durable.snapshot.meta.index);
  }
  /** Crash and restart as a node whose state machine keeps its own store, holding the entries up to
   *  `appliedIndex` (src/raft/stored-start.ts): the log whole from its snapshot, applied from there. */
  restartFromStore(appliedIndex: number, seed = 2): void {
    this.raft = this.make(seed, appliedIndex);
    this.applied = this.applied.filter((e) => e.index <= appliedIndex);
  }
  /** Replace the durable state (e.g. a crafted log) and restart from it. */
  load(d: Partial<Durable>, seed = 3): void {
    this.durable = { ...this.durable, ...d };
    this.applied = [];
    this.restart(seed);
  }
  /** Drain Ready: persist, collect messages, apply, advance. */
  drain(): Message[] {
    const out: Message[] = [];
    while (this.raft.hasReady()) {
      const rd = this.raft.ready();
      this.readys.push(rd);
      if (rd.snapshot) {
        this.durable.snapshot = rd.snapshot;
        this.durable.entries = [];
        this.applied = [];
        this.restoredFrom = rd.snapshot;
      }
      if (rd.entries.length > 0) {
        const first = rd.entries[0]!.index;
        this.durable.entries = this.durable.entries.filter((e) => e.index < first).concat(rd.entries);
      }
      if (rd.hardState) this.durable.hardState = rd.hardState;
      const violations = persistBeforeSendViolations(this.id, this.durable, rd.messages);
      if (violations.length > 0) throw new Error(`persist-before-send violated:\n${violations.join('\n')}`);
      out.push(...rd.messages);
      this.applied.push(...rd.committedEntries);
      this.reads.push(...rd.readStates);
      this.readFailures.push(...rd.readFailures);
      this.raft.advance(rd);
    }
    return out;
  }
  /** The application snapshots at `index` (<= applied) and the log is compacted, durably. */
  compact(index: number, data: Uint8Array): Snapshot {
    const snap = this.raft.compact(index, data);
    if (snap === null) throw new Error(`compact(${index}): the log is already compacted past it`);
    this.durable.snapshot = snap;
    this.durable.entries = this.durable.entries.filter((e) => e.index > index);
    return snap;
  }
  appliedData(): string[] {
    return this.applied.filter((e) => e.kind === 'normal').map((e) => dec(e.data));
  }
  /** Terms of the durable entries after the snapshot, in index order. */
  logTerms(): number[] {
    return this.durable.entries.map((e) => e.term);
  }
}

export class Network {
  nodes = new Map<NodeId, TestNode>();
  cut = new Set<string>();
  dropTypes = new Set<Message['type']>();
  /** Drop any message for which this returns true (in addition to cuts and dropTypes). */
  dropIf: ((m: Message) => boolean) | null = null;
  /** Every message sent (delivered or not), in order. */
  log: Message[] = [];
  /** Every message that was actually delivered. */
  delivered: Message[] = [];
  constructor(ids: NodeId[], tweak?: (c: RaftConfig) => void, seed = 1) {
    for (const id of ids) this.nodes.set(id, new TestNode(id, ids, tweak, seed));
  }
  node(id: NodeId): TestNode {
    return this.nodes.get(id)!;
  }
  isolate(id: NodeId): void {
    for (const other of this.nodes.keys()) if (other !== id) this.cutLink(id, other);
  }
  cutLink(a: NodeId, b: NodeId): void {
    this.cut.add(`${a}>${b}`);
    this.cut.add(`${b}>${a}`);
  }
  /** Cut only the direction from -> to. */
  cutOneWay(from: NodeId, to: NodeId): void {
    this.cut.add(`${from}>${to}`);
  }
  heal(): void {
    this.cut.clear();
  }
  isDropped(m: Message): boolean {
    return this.cut.has(`${m.from}>${m.to}`) || this.dropTypes.has(m.type) || (this.dropIf?.(m) ?? false);
  }
  /** Drain every node's Ready without delivering anything; the messages are logged. */
  collect(): Message[] {
    const pending: Message[] = [];
    for (const n of this.nodes.values()) pending.push(...n.drain());
    this.log.push(...pending);
    return pending;
  }
  /** Deliver these messages (subject to cuts and drop rules), in order. */
  deliver(msgs: Message[]): void {
    for (const m of msgs) {
      if (this.isDropped(m)) continue;
      this.delivered.push(m);
      this.nodes.get(m.to)?.raft.step(m);
    }
  }
  /** Step one message into its target by hand, bypassing cuts and drop rules. */
  inject(m: Message): void {
    this.delivered.push(m);
    this.nodes.get(m.to)!.raft.step(m);
  }
  /** Deliver until quiet. */
  settle(maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      const pending = this.collect();
      if (pending.length === 0) return;
      this.deliver(pending);
    }
    throw new Error('network did not settle');
  }
  tickAll(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) node.raft.tick();
      this.settle();
    }
  }
  /** Tick only these nodes (n times), settling after each tick. */
  tick(ids: NodeId[], n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const id of ids) this.node(id).raft.tick();
      this.settle();
    }
  }
  /** Tick only `id` until it campaigns, then settle. */
  elect(id: NodeId): void {
    const n = this.node(id);
    for (let i = 0; i < 100 && n.raft.role !== 'leader'; i++) {
      n.raft.tick();
      this.settle();
    }
  }
  leader(): TestNode | undefined {
    return [...this.nodes.values()].find((n) => n.raft.role === 'leader');
  }
  propose(id: NodeId, value: string) {
    const r = this.node(id).raft.propose(enc(value));
    this.settle();
    return r;
  }
  /** Messages of one type from the log, narrowed, optionally filtered. */
  sent<T extends Message['type']>(type: T, pred: (m: Extract<Message, { type: T }>) => boolean = () => true) {
    return this.log.filter((m): m is Extract<Message, { type: T }> => m.type === type).filter(pred);
  }
}

/** Collect messages of a type from a message list. */
export function ofType<T extends Message['type']>(msgs: Message[], type: T): Extract<Message, { type: T }>[] {
  return msgs.filter((m): m is Extract<Message, { type: T }> => m.type === type);
}

/** Build an AppendEntries by hand. */
export function appendEntries(
  p: Omit<AppendEntries, 'type' | 'round' | 'leaderCommit'> & { leaderCommit?: number; round?: number },
): AppendEntries {
  return { type: 'AppendEntries', leaderCommit: 0, round: 0, ...p };
}

/** Tick `node` alone (no delivery) until `cond` holds; returns the number of ticks. */
export function tickUntil(node: TestNode, cond: () => boolean, max = 1000): number {
  let t = 0;
  while (!cond()) {
    if (t >= max) throw new Error(`condition not reached within ${max} ticks`);
    node.raft.tick();
    t++;
  }
  return t;
}
