import { describe, expect, it } from 'vitest';
import { InvalidBatchError, StorageCrashedError } from '../../../src/raft/storage/errors.js';
import { MemoryStorage } from '../../../src/raft/storage/memory.js';
import { BOOT, HS, entries, storageContract } from './storage-contract.js';

storageContract('MemoryStorage', {
  create: async () => new MemoryStorage(),
  reopen: async (store) => {
    await store.close();
    return (store as MemoryStorage).clone();
  },
  cleanup: async () => undefined,
});

/** Settles `p` into a tag we can assert on without awaiting forever. */
function track(p: Promise<void>): { state: 'pending' | 'ok' | Error } {
  const t: { state: 'pending' | 'ok' | Error } = { state: 'pending' };
  p.then(
    () => (t.state = 'ok'),
    (err: Error) => (t.state = err),
  );
  return t;
}
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('MemoryStorage crash model', () => {
  it('without manualSync a save is durable once its promise resolves', async () => {
    const s = new MemoryStorage();
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 2, 1) });
    s.crash();
    expect((await s.clone().load())?.entries.map((e) => e.index)).toEqual([1, 2]);
  });

  it('with manualSync a save stays pending, invisible to a restart, until syncAll()', async () => {
    const s = new MemoryStorage({ manualSync: true });
    const t = track(s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 2, 1) }));
    await flush();
    expect(t.state).toBe('pending');
    expect(s.pendingCount).toBe(1);
    expect(await s.clone().load()).toBeNull();
    expect(s.syncAll()).toBe(1);
    await flush();
    expect(t.state).toBe('ok');
    expect((await s.clone().load())?.entries).toHaveLength(2);
  });

  it('crash() loses every unsynced write, rejects its promise, and keeps what was synced', async () => {
    const s = new MemoryStorage({ manualSync: true });
    const a = track(s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 2, 1) }));
    const b = track(s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 2 }, snapshot: null, entries: entries(3, 3, 2) }));
    const c = track(
      s.compact({
        meta: { index: 2, term: 1, conf: { clusterId: '', voters: ['n1'], learners: [], addresses: {}, removed: [] } },
        data: new Uint8Array(),
      }),
    );
    expect(s.sync(1)).toBe(1); // only the first write reaches the disk
    s.crash();
    await flush();
    expect(a.state).toBe('ok');
    expect(b.state).toBeInstanceOf(StorageCrashedError);
    expect(c.state).toBeInstanceOf(StorageCrashedError);
    const restarted = s.clone();
    const loaded = await restarted.load();
    expect(loaded?.hardState).toEqual(HS);
    expect(loaded?.snapshot).toEqual(BOOT);
    expect(loaded?.entries.map((e) => e.index)).toEqual([1, 2]);
    // The crashed instance is dead; the clone carries on.
    await expect(s.save({ hardState: HS, snapshot: null, entries: [] })).rejects.toThrow(StorageCrashedError);
    const d = track(restarted.save({ hardState: null, snapshot: null, entries: entries(3, 3, 2) }));
    restarted.syncAll(); // the clone keeps manualSync
    await flush();
    expect(d.state).toBe('ok');
  });

  it('a pending write that breaks a log rule is rejected at sync time; the others still apply in order', async () => {
    const s = new MemoryStorage({ manualSync: true });
    const a = track(s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 2, 1) }));
    const bad = track(s.save({ hardState: null, snapshot: null, entries: entries(9, 9, 1) }));
    const c = track(s.save({ hardState: null, snapshot: null, entries: entries(3, 3, 1) }));
    s.syncAll();
    await flush();
    expect([a.state, c.state]).toEqual(['ok', 'ok']);
    expect(bad.state).toBeInstanceOf(InvalidBatchError);
    expect((await s.load())?.entries.map((e) => e.index)).toEqual([1, 2, 3]);
  });

  it('clone() is a deep copy: writes to one store never show in the other', async () => {
    const s = new MemoryStorage();
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 1, 1) });
    const copy = s.clone();
    await copy.save({ hardState: null, snapshot: null, entries: entries(1, 2, 5) });
    const loaded = await s.load();
    loaded!.entries[0]!.data.fill(0);
    expect((await s.load())?.entries.map((e) => [e.index, e.term])).toEqual([[1, 1]]);
    expect(new TextDecoder().decode((await s.load())?.entries[0]?.data)).toBe('cmd-1-1');
    expect((await copy.load())?.entries.map((e) => [e.index, e.term])).toEqual([
      [1, 5],
      [2, 5],
    ]);
  });
});
