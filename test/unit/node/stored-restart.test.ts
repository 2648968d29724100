// The real driver with a state machine that keeps its own store (stored-list.ts), on virtual time: after a
// whole-cluster stop, a follower that was a few entries behind the leader's store is caught up with entries
// from the log's catch-up tail, which the restart keeps (src/raft/stored-start.ts) — no snapshot, no stream —
// and no node applies an entry its store already held. One behind the tail's start is streamed the store.
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/raft/core/types.js';
import { RaftNode } from '../../../src/raft/node.js';
import { MemoryStorage } from '../../../src/raft/storage/memory.js';
import { MemoryHub } from '../../../src/transport/memory.js';
import { StoredList, enc } from './stored-list.js';
import { VirtualEnv } from './virtual-env.js';

const ids = ['n1', 'n2', 'n3'];
/** The values every node ends with: 30 applied by all, `missed` while one follower was cut off, one after. */
const allValues = (missed: number) => [
  ...Array.from({ length: 30 }, (_, i) => `v${i}`),
  ...Array.from({ length: missed }, (_, i) => `w${i}`),
  'after',
];

/**
 * Three nodes apply 30 values; one follower is cut off while `missed` more commit; every node stops and all
 * restart (the follower's store now behind the others'), and the new leader commits one more value, which
 * every node applies. The store is synced every 20 applied entries and the log compacted to 8 below it.
 */
async function restartWithOneBehind(missed: number) {
  const time = new VirtualEnv(5);
  const settle = <T>(p: Promise<T>): Promise<T> => time.until(p);
  const hub = new MemoryHub(time);
  const storages = new Map(ids.map((id) => [id, new MemoryStorage()]));
  const fsms = new Map(ids.map((id) => [id, new StoredList()]));
  const fatal: string[] = [];
  const sent: Message[] = [];
  let nodes = new Map<string, RaftNode<number>>();
  const startAll = async () => {
    nodes = new Map();
    for (const id of ids) {
      let node: RaftNode<number> | null = null;
      hub.unregister(id);
      const hubTransport = hub.register(id, (m) => node?.receive(m));
      const transport = {
        send: (messages: Message[]) => {
          sent.push(...messages);
          hubTransport.send(messages);
        },
      };
      node = await RaftNode.start({
        id,
        voters: ids,
        storage: storages.get(id)!,
        transport,
        fsm: fsms.get(id)!,
        tickMs: 5,
        snapshotEvery: 20,
        catchUpEntries: 8,
        env: time.env(),
      });
      node.on('fatal', (err: unknown) => fatal.push(`${id}: ${String(err)}`));
      nodes.set(id, node);
    }
  };
  const leaderOf = async () => {
    await time.runUntil('a leader', () => [...nodes.values()].some((n) => n.isLeader()));
    return [...nodes.values()].find((n) => n.isLeader())!;
  };

  await startAll();
  let leader = await leaderOf();
  for (let i = 0; i < 30; i++) await settle(leader.propose(enc(`v${i}`), 2000));
  const behind = ids.find((id) => id !== leader.id)!;
  await time.runUntil('the follower to apply them', () => fsms.get(behind)!.values.length === 30);
  hub.isolate(behind);
  for (let i = 0; i < missed; i++) await settle(leader.propose(enc(`w${i}`), 2000));
  const other = ids.find((id) => id !== leader.id && id !== behind)!;
  await time.runUntil('the other follower to apply them', () => fsms.get(other)!.values.length === 30 + missed);
  expect(leader.status().firstIndex, 'the log was compacted below the store').toBeGreaterThan(1);
  for (const n of nodes.values()) await n.stop();
  // Each store's point: what its node applied (this store keeps every applied entry at once).
  const points = new Map(ids.map((id) => [id, nodes.get(id)!.status().appliedIndex]));
  expect(points.get(behind)).toBeLessThan(Math.min(points.get(leader.id)!, points.get(other)!));

  hub.heal();
  sent.length = 0;
  await startAll();
  // Each restarted node is applied at its store's point, its log starting below it.
  const restarted = new Map(ids.map((id) => [id, nodes.get(id)!.status()]));
  for (const id of ids) expect(restarted.get(id)!.appliedIndex, id).toBe(points.get(id));
  leader = await leaderOf();
  expect(leader.id).not.toBe(behind);
  await settle(leader.propose(enc('after'), 2000));
  await time.runUntil('every node to apply it, the follower behind too', () =>
    ids.every((id) => fsms.get(id)!.values.length === allValues(missed).length),
  );
  for (const id of ids) {
    // Each value once, in order: nothing the store held was applied again.
    expect(fsms.get(id)!.values, id).toEqual(allValues(missed));
  }
  expect(fatal).toEqual([]);
  for (const n of nodes.values()) await n.stop();
  return { sent, fsms, behind, leader: leader.id, points, restarted };
}

describe('a whole-cluster restart with a follower behind the leader’s store', () => {
  it('catches the follower up with AppendEntries from the kept tail, and sends no snapshot', async () => {
    const { sent, fsms, behind, leader, points, restarted } = await restartWithOneBehind(3);
    const behindPoint = points.get(behind)!;
    expect(restarted.get(leader)!.firstIndex, 'the leader’s log reaches below the follower’s point').toBeLessThanOrEqual(behindPoint);
    expect(sent.filter((m) => m.type === 'InstallSnapshot')).toEqual([]);
    expect(sent.some((m) => m.type === 'AppendEntries' && m.to === behind && m.entries.some((e) => e.index === behindPoint + 1))).toBe(
      true,
    );
    for (const id of ids) expect(fsms.get(id)!.seen.streamsOpened, id).toBe(0);
  });

  it('streams the store to a follower behind the start of the kept tail (the log’s start below the applied index)', async () => {
    const { sent, fsms, behind, leader, points, restarted } = await restartWithOneBehind(30);
    const lead = restarted.get(leader)!;
    expect(lead.firstIndex).toBeGreaterThan(points.get(behind)! + 1);
    expect(lead.firstIndex).toBeLessThan(lead.appliedIndex);
    expect(fsms.get(leader)!.seen.streamsOpened).toBeGreaterThan(0);
    expect(fsms.get(behind)!.seen.installed).toBe(1);
    expect(sent.some((m) => m.type === 'InstallSnapshot' && m.to === behind)).toBe(true);
  });
});
