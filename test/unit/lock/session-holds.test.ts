import { describe, expect, it } from 'vitest';
import { Lease } from '../../../src/lock/lease.js';
import { SessionHolds } from '../../../src/lock/session.js';

describe('SessionHolds', () => {
  it('adds and removes holds in any order, each lease keeping its slot, and ignores one it does not hold', () => {
    const holds = new SessionHolds();
    const leases = Array.from({ length: 50 }, (_, i) => new Lease(`k${i}`, 'o', i + 1, 0, 0, 0, 0));
    for (const lease of leases) holds.add(lease);
    const kept = new Set(leases.map((l) => l.key));
    // A deterministic shuffle of removals: the last, the first, a middle one, ... (each moves the last into a hole).
    for (let step = 0, at = 7; step < 30; step++, at = (at * 31 + 11) % leases.length) {
      const lease = leases[at]!;
      holds.delete(lease);
      holds.delete(lease); // twice: the second changes nothing
      kept.delete(lease.key);
      expect(lease.sessionSlot).toBe(-1);
      expect(holds.size).toBe(kept.size);
      expect(new Set(holds.keys())).toEqual(kept);
    }
    const stranger = new Lease('other', 'o', 99, 0, 0, 0, 0);
    holds.delete(stranger);
    expect(new Set(holds.keys())).toEqual(kept);
    // Another session's hold in the same slot number is not this session's to remove.
    const elsewhere = new SessionHolds();
    elsewhere.add(stranger);
    holds.delete(stranger);
    expect(new Set(holds.keys())).toEqual(kept);
  });
});
