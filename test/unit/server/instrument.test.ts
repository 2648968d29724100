import { describe, expect, it } from 'vitest';
import type { PersistBatch, RaftStorage } from '../../../src/raft/storage/types.js';
import { instrumentStorage } from '../../../src/server/observability/instrument.js';
import type { NodeMetrics } from '../../../src/server/observability/metrics.js';

describe('instrumentStorage', () => {
  it('times every synced batch (entries, a new term, a vote) but not one that only moves the commit index', async () => {
    const saved: PersistBatch[] = [];
    const storage = { save: async (b: PersistBatch) => void saved.push(b) } as unknown as RaftStorage;
    let observed = 0;
    const m = { fsyncSeconds: { observe: () => observed++ } } as unknown as NodeMetrics;
    const s = instrumentStorage(storage, m, () => null);
    const entry = { index: 1, term: 1, kind: 'normal' as const, data: new Uint8Array() };
    const steps: [PersistBatch, number][] = [
      [{ hardState: { term: 1, votedFor: 'n1', commitIndex: 0 }, snapshot: null, entries: [entry] }, 1],
      [{ hardState: { term: 1, votedFor: 'n1', commitIndex: 1 }, snapshot: null, entries: [] }, 1], // commit only
      [{ hardState: null, snapshot: null, entries: [{ ...entry, index: 2 }] }, 2],
      [{ hardState: { term: 2, votedFor: null, commitIndex: 1 }, snapshot: null, entries: [] }, 3], // new term
      [{ hardState: { term: 2, votedFor: 'n2', commitIndex: 1 }, snapshot: null, entries: [] }, 4], // a vote
      [{ hardState: { term: 2, votedFor: 'n2', commitIndex: 2 }, snapshot: null, entries: [] }, 4], // commit only
    ];
    for (const [batch, count] of steps) {
      await s.save(batch);
      expect(observed).toBe(count);
    }
    expect(saved).toHaveLength(steps.length); // every batch still reaches the store
  });
});
