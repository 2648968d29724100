// The real driver with a state machine that keeps its own store and streams it (fsm.ts StoredStateMachine),
// on virtual time: a follower behind the log's start is sent the store as chunks; when what it wrote does not
// verify, the follower keeps running — its state and log as they were, the bad copy thrown away — and the
// leader sends the snapshot again, which installs. The store here is a small stand-in (stored-list.ts).
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/raft/core/types.js';
import { RaftNode } from '../../../src/raft/node.js';
import { MemoryStorage } from '../../../src/raft/storage/memory.js';
import { MemoryHub } from '../../../src/transport/memory.js';
import { StoredList, enc } from './stored-list.js';
import { VirtualEnv } from './virtual-env.js';

describe('a follower whose streamed snapshot does not verify', () => {
  it('keeps running with its state and log, throws the copy away, and installs the snapshot the leader sends again', async () => {
    const time = new VirtualEnv(11);
    const settle = <T>(p: Promise<T>): Promise<T> => time.until(p);
    const hub = new MemoryHub(time);
    const ids = ['n1', 'n2', 'n3'];
    const fsms = new Map<string, StoredList>();
    const nodes = new Map<string, RaftNode<number>>();
    const fatal: string[] = [];
    /** Last chunks to n3 whose last byte is flipped on the way (the first two streams). */
    let corruptLeft = 2;
    const toN3: { atMs: number; m: Message }[] = [];
    for (const id of ids) {
      const fsm = new StoredList();
      fsms.set(id, fsm);
      let node: RaftNode<number> | null = null;
      const hubTransport = hub.register(id, (m) => node?.receive(m));
      const transport = {
        send: (messages: Message[]) => {
          const out = messages.map((m) => {
            if (m.type !== 'InstallSnapshot' || m.to !== 'n3' || !m.done || corruptLeft === 0) return m;
            corruptLeft--;
            const chunk = m.chunk.slice();
            chunk[chunk.length - 1] = chunk[chunk.length - 1]! ^ 0x01;
            return { ...m, chunk };
          });
          for (const m of out) if (m.to === 'n3' || m.from === 'n3') toN3.push({ atMs: time.nowMs, m });
          hubTransport.send(out);
        },
      };
      node = await RaftNode.start({
        id,
        voters: ids,
        storage: new MemoryStorage(),
        transport,
        fsm,
        tickMs: 5,
        snapshotEvery: 10,
        catchUpEntries: 2,
        raft: { snapshotChunkBytes: 16 },
        env: time.env(),
      });
      node.on('fatal', (err: unknown) => fatal.push(`${id}: ${String(err)}`));
      nodes.set(id, node);
    }
    const n3 = nodes.get('n3')!;
    await time.runUntil('a leader', () => n3.leaderId !== null && nodes.get(n3.leaderId)?.isLeader() === true);
    let leader = nodes.get(n3.leaderId!)!;
    for (let i = 0; i < 5; i++) await settle(leader.propose(enc(`early${i}`), 2000));
    await time.runUntil('n3 to apply them', () => fsms.get('n3')!.values.length === 5);
    hub.isolate('n3');
    await time.runUntil('a leader without n3', () => [...nodes.values()].some((n) => n.id !== 'n3' && n.isLeader()));
    leader = [...nodes.values()].find((n) => n.id !== 'n3' && n.isLeader())!;
    const before = { ...n3.status(), values: [...fsms.get('n3')!.values] };
    for (let i = 0; i < 60; i++) await settle(leader.propose(enc(`v${i}`), 2000));
    expect(fsms.get(leader.id)!.values).toHaveLength(65);
    await time.runUntil('the log compacted past n3', () => leader.status().firstIndex > before.lastIndex + 1);

    hub.heal();
    await time.runUntil('n3 to refuse two streams', () => fsms.get('n3')!.seen.refused === 2);
    // Refused at the last chunk: nothing taken, neither by the store nor by the log.
    expect(fatal).toEqual([]);
    expect(fsms.get('n3')!.seen.installed).toBe(0);
    expect(fsms.get('n3')!.values).toEqual(before.values);
    expect(n3.status()).toMatchObject({ firstIndex: before.firstIndex, lastIndex: before.lastIndex, appliedIndex: before.appliedIndex });

    await time.runUntil('n3 to install the one sent again', () => fsms.get('n3')!.seen.installed === 1);
    await time.runUntil('n3 to catch up', () => fsms.get('n3')!.values.length === fsms.get(leader.id)!.values.length);
    expect(fsms.get('n3')!.values).toEqual(fsms.get(leader.id)!.values);
    expect(fatal).toEqual([]);
    // Each refusal told the leader "done, not taken"; it started again from offset 0 a heartbeat later, not at once.
    const refusals = toN3.filter(({ m }) => m.type === 'InstallSnapshotResponse' && m.done && !m.success);
    expect(refusals).toHaveLength(2);
    for (const r of refusals) {
      const restart = toN3.slice(toN3.indexOf(r)).find(({ m }) => m.type === 'InstallSnapshot' && m.to === 'n3');
      expect(restart?.m.type === 'InstallSnapshot' && restart.m.offset).toBe(0);
      expect(restart!.atMs - r.atMs, 'the stream starts again at the next heartbeat').toBeGreaterThan(0);
    }
    for (const n of nodes.values()) await n.stop();
  });
});
