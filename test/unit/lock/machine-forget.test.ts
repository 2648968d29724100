// Bounding the free keys' records (issue 11): a `forget` entry drops free keys freed at or before its
// cut-off, and Get answers last_token from a watermark that is never below the real value.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

function forget(f: Feed, upToMs: number) {
  const r = f.apply({ type: 'forget', timeMs: f.timeMs, upToMs });
  if (r.type !== 'forget') throw new Error(`expected a forget result, got ${r.type}`);
  return r;
}

describe('forget: free keys are dropped by log time, last_token comes from the watermark', () => {
  it('drops exactly the keys freed at or before upToMs; held keys and newer free keys stay', () => {
    const f = new Feed();
    f.termStart(1000);
    const a = f.at(1000).acquire('a', 'o', 5000);
    f.release('a', 'o', a.token);
    const b = f.at(2000).acquire('b', 'o', 5000);
    f.release('b', 'o', b.token);
    const c = f.at(2500).acquire('c', 'o', 5000); // held
    expect(f.machine.keyCount).toBe(3);

    const r = forget(f.at(3000), 1000);
    expect(r).toMatchObject({ forgotten: 1, watermark: a.token });
    expect(f.machine.keyCount).toBe(2);
    expect(f.machine.get('a').lastToken).toBe(a.token); // from the watermark: equal to its real value here
    expect(f.machine.get('b').lastToken).toBe(b.token); // its own record
    expect(f.machine.get('c')).toMatchObject({ held: true, token: c.token });

    expect(forget(f, 2999)).toMatchObject({ forgotten: 1, watermark: b.token });
    // A key never used now reports the watermark: never below its real value (0), as documented.
    expect(f.machine.get('never').lastToken).toBe(b.token);
    expect(f.machine.get('a').lastToken).toBe(b.token);
    expect(f.machine.get('c').held).toBe(true);
  });

  it('a forgotten key acquired again gets a token above every earlier one (tokens are log indexes)', () => {
    const f = new Feed();
    f.termStart(0);
    const first = f.acquire('k', 'o', 1000);
    f.release('k', 'o', first.token);
    forget(f.at(10), 10);
    const again = f.acquire('k', 'p', 1000);
    expect(again.acquired).toBe(true);
    expect(again.token > first.token).toBe(true);
    expect(f.machine.get('k').lastToken).toBe(again.token);
  });

  it('is deterministic across a snapshot restore: the same keys go, the same bytes result', () => {
    const f = new Feed();
    f.termStart(0);
    for (let i = 0; i < 50; i++) {
      f.at(Math.floor(i / 5)); // ties in freeing time, in an order that is not key order
      const r = f.acquire(`key-${(i * 7) % 50}`, 'o', 1000);
      f.release(`key-${(i * 7) % 50}`, 'o', r.token);
    }
    const restored = new Feed(LockMachine.restore(f.machine.snapshot()));
    restored.term = f.term;
    restored.timeMs = f.timeMs;
    const a = forget(f, 4);
    const b = forget(restored, 4);
    expect(b).toEqual(a);
    expect(a.forgotten).toBe(25);
    expect(restored.machine.digest()).toBe(f.machine.digest());
    expect(LockMachine.restore(f.machine.snapshot()).get('never').lastToken).toBe(a.watermark);
  });

  it('counts leases per owner as they are granted, taken over and freed', () => {
    const f = new Feed();
    f.termStart(0);
    const x = f.acquire('x', 'alice', 100);
    const y = f.acquire('y', 'alice', 100);
    expect(f.machine.leaseCountOf('alice')).toBe(2);
    const bobs = f.at(200).acquire('x', 'bob', 100); // alice's lease on x lapsed: bob takes it over
    expect([f.machine.leaseCountOf('alice'), f.machine.leaseCountOf('bob')]).toEqual([1, 1]);
    expect(f.release('x', 'alice', x.token)).toMatchObject({ released: false, reason: 'WRONG_OWNER' });
    expect(LockMachine.restore(f.machine.snapshot()).leaseCountOf('bob')).toBe(1);
    expect(f.machine.recordOf('x')).toEqual({ owner: 'bob' });
    expect(f.machine.recordOf('zzz')).toBeUndefined();
    expect(f.machine.ownersWithLeases).toBe(2);
    // An owner whose last lease ends leaves no record behind (one-off owners must not grow the machine).
    expect(f.release('x', 'bob', bobs.token)).toMatchObject({ released: true });
    expect(f.machine.leaseCountOf('bob')).toBe(0);
    expect(f.machine.ownersWithLeases).toBe(1);
    f.release('y', 'alice', y.token);
    expect(f.machine.ownersWithLeases).toBe(0);
  });

  it('churn: 200k short-lived keys, then forget — keys and snapshot return to the size of an empty machine', () => {
    const f = new Feed();
    f.termStart(0);
    const baseline = f.machine.snapshot().length;
    for (let i = 0; i < 200_000; i++) {
      f.at(i);
      const r = f.acquire(`job:${i.toString().padStart(8, '0')}`, 'worker', 1000);
      f.release(`job:${i.toString().padStart(8, '0')}`, 'worker', r.token);
    }
    const grown = f.machine.snapshot().length;
    expect(f.machine.keyCount).toBe(200_000);
    const r = forget(f.at(200_000), 199_999);
    expect(r.forgotten).toBe(200_000);
    const after = f.machine.snapshot().length;
    expect(f.machine.keyCount).toBe(0);
    expect(after).toBeLessThanOrEqual(baseline + 8); // the watermark and the counters' widths
    expect(grown).toBeGreaterThan(100 * after);
    console.log(`machine churn: snapshot ${baseline} B empty, ${grown} B with 200k free keys, ${after} B after forget`);
  });
});
