// The real driver (timers, async storage, the persist -> send -> apply -> advance loop) on an
// in-process hub. Waits on conditions with deadlines; no fixed sleeps.
import { afterEach, describe, expect, it } from 'vitest';
import { RaftNode } from '../../../src/raft/node.js';
import type { StateMachine } from '../../../src/raft/fsm.js';
import type { Entry } from '../../../src/raft/core/types.js';
import { MemoryStorage } from '../../../src/raft/storage/memory.js';
import { MemoryHub } from '../../../src/transport/memory.js';

class ListMachine implements StateMachine<number> {
  values: string[] = [];
  apply(e: Entry): number {
    if (e.kind === 'normal') this.values.push(new TextDecoder().decode(e.data));
    return this.values.length;
  }
  snapshot(): Uint8Array {
    return new TextEncoder().encode(JSON.stringify(this.values));
  }
  restore(data: Uint8Array): void {
    this.values = data.length === 0 ? [] : JSON.parse(new TextDecoder().decode(data));
  }
}

async function waitFor<T>(what: string, fn: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const enc = (s: string) => new TextEncoder().encode(s);

describe('RaftNode driver', () => {
  const started: RaftNode<number>[] = [];
  afterEach(async () => {
    for (const n of started.splice(0)) await n.stop();
  });

  async function cluster(ids: string[], hub: MemoryHub, storages: Map<string, MemoryStorage>, fsms: Map<string, ListMachine>) {
    const nodes = new Map<string, RaftNode<number>>();
    for (const id of ids) await startOne(id, ids, hub, storages, fsms, nodes);
    return nodes;
  }

  async function startOne(
    id: string,
    ids: string[],
    hub: MemoryHub,
    storages: Map<string, MemoryStorage>,
    fsms: Map<string, ListMachine>,
    nodes: Map<string, RaftNode<number>>,
  ) {
    if (!storages.has(id)) storages.set(id, new MemoryStorage());
    const fsm = new ListMachine();
    fsms.set(id, fsm);
    let node: RaftNode<number> | null = null;
    const transport = hub.register(id, (m) => node?.receive(m));
    node = await RaftNode.start({ id, voters: ids, storage: storages.get(id)!, transport, fsm, tickMs: 5, snapshotEvery: 20 });
    nodes.set(id, node);
    started.push(node);
    return node;
  }

  it('elects a leader, replicates proposals, serves linearizable reads, compacts, and survives a leader failure', async () => {
    const ids = ['n1', 'n2', 'n3'];
    const hub = new MemoryHub();
    const storages = new Map<string, MemoryStorage>();
    const fsms = new Map<string, ListMachine>();
    const nodes = await cluster(ids, hub, storages, fsms);
    const leader = await waitFor('a leader', () => [...nodes.values()].find((n) => n.isLeader()));

    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => leader.propose(enc(`v${i}`), 2000)));
    expect(results.map((r) => r.result).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const idx = await leader.readBarrier(2000);
    expect(idx).toBeGreaterThanOrEqual(results[results.length - 1]!.index);
    await waitFor('followers to apply', () => [...fsms.values()].every((f) => f.values.length === 50));

    // Kill the leader (drop it from the hub), elect another, keep writing.
    hub.isolate(leader.id);
    await leader.stop();
    const survivors = [...nodes.values()].filter((n) => n !== leader);
    const next = await waitFor('a new leader', () => survivors.find((n) => n.isLeader()), 10_000);
    await next.propose(enc('after'), 2000);
    // Restart the old leader from its durable storage: it catches up (by snapshot or log).
    hub.heal();
    hub.unregister(leader.id);
    nodes.delete(leader.id);
    await startOne(leader.id, ids, hub, storages, fsms, nodes);
    await waitFor('restarted node to catch up', () => fsms.get(leader.id)!.values.length === 51, 10_000);
    expect(fsms.get(leader.id)!.values).toEqual(fsms.get(next.id)!.values);
  });

  it('a follower forwards reads to the leader; a minority node cannot confirm a read', async () => {
    const ids = ['a', 'b', 'c'];
    const hub = new MemoryHub();
    const nodes = await cluster(ids, hub, new Map(), new Map());
    const leader = await waitFor('a leader', () => [...nodes.values()].find((n) => n.isLeader()));
    await leader.propose(enc('x'), 2000);
    const follower = [...nodes.values()].find((n) => n !== leader)!;
    await waitFor('follower to know the leader', () => follower.leaderId === leader.id);
    await expect(follower.readBarrier(2000)).resolves.toBeGreaterThan(0);
    hub.isolate(follower.id);
    await expect(follower.readBarrier(300)).rejects.toThrow();
  });
});
