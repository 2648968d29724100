// A tiny synchronous in-memory network for Raft unit tests (etcd's raft_test.go "network" in spirit):
// deliver messages in order, optionally dropping links; persistence is instantaneous.
import { Raft, defaultRaftConfig } from '../../../src/raft/core/raft.js';
import type { Entry, HardState, Message, NodeId, RaftConfig, Snapshot } from '../../../src/raft/core/types.js';
import { bootstrapSnapshot, emptyHardState } from '../../../src/raft/core/types.js';

export function seededRng(seed: number) {
  let a = seed >>> 0;
  return {
    int(n: number): number {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return (((t ^ (t >>> 14)) >>> 0) % n);
    },
  };
}

export interface Durable {
  hardState: HardState;
  snapshot: Snapshot;
  entries: Entry[];
}

export class TestNode {
  raft: Raft;
  durable: Durable;
  applied: Entry[] = [];
  reads: { ctx: string; index: number }[] = [];
  constructor(readonly id: NodeId, voters: NodeId[], readonly tweak?: (c: RaftConfig) => void, seed = 1) {
    this.durable = { hardState: emptyHardState(), snapshot: bootstrapSnapshot(voters), entries: [] };
    this.raft = this.make(seed);
  }
  make(seed: number): Raft {
    const cfg = defaultRaftConfig(this.id, seededRng(seed * 7919 + this.id.charCodeAt(this.id.length - 1)));
    this.tweak?.(cfg);
    return new Raft(cfg, {
      hardState: { ...this.durable.hardState },
      snapshot: this.durable.snapshot,
      entries: [...this.durable.entries],
    });
  }
  /** Crash and restart from durable state. */
  restart(seed = 2): void {
    this.raft = this.make(seed);
    this.applied = this.applied.filter((e) => e.index <= this.durable.snapshot.meta.index);
  }
  /** Drain Ready: persist, collect messages, apply, advance. */
  drain(): Message[] {
    const out: Message[] = [];
    while (this.raft.hasReady()) {
      const rd = this.raft.ready();
      if (rd.snapshot) {
        this.durable.snapshot = rd.snapshot;
        this.durable.entries = [];
        this.applied = [];
      }
      if (rd.entries.length > 0) {
        const first = rd.entries[0]!.index;
        this.durable.entries = this.durable.entries.filter((e) => e.index < first).concat(rd.entries);
      }
      if (rd.hardState) this.durable.hardState = rd.hardState;
      out.push(...rd.messages);
      this.applied.push(...rd.committedEntries);
      this.reads.push(...rd.readStates);
      this.raft.advance(rd);
    }
    return out;
  }
  appliedData(): string[] {
    return this.applied.filter((e) => e.kind === 'normal').map((e) => new TextDecoder().decode(e.data));
  }
}

export class Network {
  nodes = new Map<NodeId, TestNode>();
  cut = new Set<string>();
  dropTypes = new Set<Message['type']>();
  log: Message[] = [];
  constructor(ids: NodeId[], tweak?: (c: RaftConfig) => void) {
    for (const id of ids) this.nodes.set(id, new TestNode(id, ids, tweak));
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
  heal(): void {
    this.cut.clear();
  }
  /** Deliver until quiet. */
  settle(maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      let pending: Message[] = [];
      for (const n of this.nodes.values()) pending.push(...n.drain());
      if (pending.length === 0) return;
      for (const m of pending) {
        this.log.push(m);
        if (this.cut.has(`${m.from}>${m.to}`) || this.dropTypes.has(m.type)) continue;
        this.nodes.get(m.to)?.raft.step(m);
      }
    }
    throw new Error('network did not settle');
  }
  tickAll(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) node.raft.tick();
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
    const r = this.node(id).raft.propose(new TextEncoder().encode(value));
    this.settle();
    return r;
  }
}
