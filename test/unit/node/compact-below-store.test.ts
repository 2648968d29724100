// The driver compacts the log of a state machine with a store of its own only below what the store holds
// durably (node-snapshots.ts maybeCompactBelowStore: the point persist() reported), never below what it has
// applied: an entry applied but not yet in the store is, until the store's next batch, only in the log.
// Issue 36's planted bug 4 ("the WAL is compacted past the stored applied index") was caught only by the lock
// simulation; here a stand-in store whose persist() reports a point behind the applied index shows it directly.
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../../src/raft/core/types.js';
import { RaftNode } from '../../../src/raft/node.js';
import { MemoryStorage } from '../../../src/raft/storage/memory.js';
import { MemoryHub } from '../../../src/transport/memory.js';
import { StoredList, enc } from './stored-list.js';
import { VirtualEnv } from './virtual-env.js';

const ids = ['n1', 'n2', 'n3'];

describe('log compaction under a store whose durable point lags what is applied', () => {
  it('never compacts past the point the store reported durable, on any node', async () => {
    const time = new VirtualEnv(5);
    const hub = new MemoryHub(time);
    const fsms = new Map(ids.map((id) => [id, new StoredList(4)]));
    const compactions: { id: string; index: number; persisted: number }[] = [];
    const nodes: RaftNode<number>[] = [];
    for (const id of ids) {
      const storage = new MemoryStorage();
      const compact = storage.compact.bind(storage);
      storage.compact = (snapshot: Snapshot) => {
        compactions.push({ id, index: snapshot.meta.index, persisted: Math.max(0, ...fsms.get(id)!.persisted) });
        return compact(snapshot);
      };
      let node: RaftNode<number> | null = null;
      const transport = hub.register(id, (m) => node?.receive(m));
      node = await RaftNode.start({
        id,
        voters: ids,
        storage,
        transport,
        fsm: fsms.get(id)!,
        tickMs: 5,
        snapshotEvery: 10,
        catchUpEntries: 0,
        env: time.env(),
      });
      nodes.push(node);
    }
    await time.runUntil('a leader', () => nodes.some((n) => n.isLeader()));
    const leader = nodes.find((n) => n.isLeader())!;
    for (let i = 0; i < 60; i++) await time.until(leader.propose(enc(`v${i}`), 2000));
    await time.runUntil('every node to apply them', () => ids.every((id) => fsms.get(id)!.values.length === 60));
    for (const n of nodes) await n.stop();

    // Every node compacted (else the check below says nothing), and none past its store's durable point.
    for (const id of ids) expect(compactions.filter((c) => c.id === id).length, id).toBeGreaterThan(0);
    expect(compactions.filter((c) => c.index > c.persisted)).toEqual([]);
    // The compactions were below a durable point that had moved (not all at the start).
    expect(compactions.some((c) => c.persisted > 0 && c.index > 0)).toBe(true);
  });
});
