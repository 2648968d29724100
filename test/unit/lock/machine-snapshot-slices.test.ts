// A snapshot written in slices while entries keep applying (LockMachine.beginSnapshot) must be exactly the
// state at the index where it began: byte for byte what snapshot() returned at that moment. The random
// entries between slices hit every copy-on-write path: acquires, renews and releases of keys in sections
// not written yet, expiries, forget entries, a term start (every lease changes), dedup records pruned by
// time and by the cap before the reader reached them, and queued acquires replacing remembered refusals.
// The check is also run on scratch copies of src/lock with one copy-on-write step left out, and must fail.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { OPTIONS, RandomLog, type MachineClass, type SlicedMachine } from './random-log.js';
import { materializeMutant, removeMutant } from '../../sim/lock-mutants.js';

/**
 * Fill a machine, open a sliced snapshot (tiny slices), keep applying entries between slices; returns the
 * sliced bytes and what snapshot() gave at the opening.
 */
function slicedVersusExpected(M: MachineClass, seed: number, level = 1): { sliced: Uint8Array; expected: Uint8Array; slices: number } {
  const machine = new M(OPTIONS);
  const log = new RandomLog(machine, seed, level);
  log.run(12_000);
  const expected = machine.snapshot();
  const job = machine.beginSnapshot(expected.length, 7);
  let slices = 0;
  while (!job.step()) {
    slices++;
    log.run(3);
  }
  return { sliced: job.finish(), expected, slices };
}

const SEEDS = [1, 2, 3, 4, 5, 6];
/** The planted bugs below need more seeds than the check itself: since term starts reach leases lazily
 *  (machine.ts settle), a read right after an epoch copies a lease's section before the planted write
 *  would have skipped it, so a planted bug shows only on a lease that was already settled. */
const PLANTED_SEEDS = Array.from({ length: 40 }, (_, i) => i + 1);

describe('a snapshot written in slices while entries keep applying', () => {
  it('equals the state at the index where it began, byte for byte, and restores to it', () => {
    // Seeds 7 and 8 at cluster level 6: acquires' records kept past the window (remembered again) mid-snapshot.
    for (const [seed, level] of [...SEEDS.map((s) => [s, 1] as const), [7, 6] as const, [8, 6] as const]) {
      const { sliced, expected, slices } = slicedVersusExpected(LockMachine as unknown as MachineClass, seed, level);
      // ~2,000 keys in 16 sections (a section is written in one piece) and 400 dedup records, 7 a slice.
      expect(slices, 'many slices, with entries applied between them').toBeGreaterThan(50);
      expect(Buffer.from(sliced).equals(Buffer.from(expected)), `seed ${seed}: sliced snapshot differs from the state at its index`).toBe(
        true,
      );
      expect(Buffer.from(LockMachine.restore(sliced, OPTIONS).snapshot()).equals(Buffer.from(expected))).toBe(true);
    }
  });

  it('a synchronous snapshot (a digest) taken while a sliced one is open leaves both exact', () => {
    const machine = new LockMachine(OPTIONS);
    const log = new RandomLog(machine as unknown as SlicedMachine, 9);
    log.run(12_000);
    const expected = machine.snapshot();
    const job = machine.beginSnapshot(0, 5);
    for (let slice = 0; !job.step(); slice++) {
      log.run(2);
      if (slice % 20 !== 0) continue;
      const now = machine.snapshot();
      expect(Buffer.from(LockMachine.restore(now, OPTIONS).snapshot()).equals(Buffer.from(now))).toBe(true);
    }
    expect(Buffer.from(job.finish()).equals(Buffer.from(expected))).toBe(true);
  });

  // Planted bugs: each leaves out one copy-on-write step; the check above must notice on some seed.
  const PLANTED = [
    {
      id: 'cow-renew',
      name: 'a renew does not copy its section before changing the lease',
      patches: [
        {
          file: 'machine-entries.ts',
          find: `    s.touch(command.key);\n    lease.grant(lease.owner,`,
          replace: `    lease.grant(lease.owner,`,
        },
      ],
    },
    {
      id: 'cow-release',
      name: 'a release (or expire) does not copy its section before removing the lease',
      patches: [
        {
          file: 'machine-leases.ts',
          find: `  s.touch(lease.key);\n  s.leases.delete(lease.key);`,
          replace: `  s.leases.delete(lease.key);`,
        },
      ],
    },
    {
      id: 'cow-settle',
      name: 'a term start reaching a lease lazily changes it without copying its section',
      patches: [
        {
          file: 'machine-state.ts',
          find: `    this.touch(lease.key); // its section as it was, if the snapshot has not reached it; the store rewrites its record\n`,
          replace: ``,
        },
      ],
    },
    {
      id: 'cow-dedup',
      name: 'a replaced dedup record is dropped from an open snapshot',
      patches: [
        {
          file: 'dedup.ts',
          find: `    return successor !== undefined && successor >= endSeq;`,
          replace: `    return successor !== undefined && successor >= endSeq && false;`,
        },
      ],
    },
  ];
  for (const planted of PLANTED) {
    it(`catches a planted bug: ${planted.name}`, async () => {
      const dir = materializeMutant({ ...planted, maxSeeds: PLANTED_SEEDS.length });
      try {
        const broken = ((await import(`${dir}/machine.ts`)) as { LockMachine: MachineClass }).LockMachine;
        let caught = 0;
        for (const seed of PLANTED_SEEDS) {
          try {
            const { sliced, expected } = slicedVersusExpected(broken, seed);
            if (!Buffer.from(sliced).equals(Buffer.from(expected))) caught++;
          } catch {
            caught++; // the writer noticed its own inconsistency (e.g. a record count off)
          }
        }
        expect(caught, `planted bug ${planted.id} survived ${PLANTED_SEEDS.length} seeds`).toBeGreaterThan(0);
      } finally {
        removeMutant(dir);
      }
    });
  }
});
