// Planted bugs in the store that ships (src/raft/storage), which the simulator must catch now that its
// nodes persist through it: a checker that cannot fail proves nothing. Each is a textual patch of a SCRATCH
// copy of src/raft and src/trace (made under .tmp/ in the repository, so the store's packages still resolve;
// deleted afterwards, never committed). A patch whose text no longer matches fails loudly: update it here.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StorageModule } from './types.js';

interface Patch {
  /** Under src/raft/storage. */
  file: string;
  find: string;
  replace: string;
}

export interface StorageMutant {
  name: string;
  patches: Patch[];
  /** The checks that may catch it. */
  expect: string[];
  /** Seeds of the Raft simulation the test may use (sized from the measured catch rate, with headroom). */
  maxSeeds: number;
}

export const STORAGE_MUTANTS: StorageMutant[] = [
  {
    // Measured: 993/1000 Raft seeds (commit-in-log 983, committed-truncated 10), first at seed 1.
    name: 'a save writes its hard state (the commit index) in a frame ahead of the entries it commits',
    patches: [
      {
        file: 'wal-storage.ts',
        find: `      await this.append(encodeFrame({ base: null, records, hardState: own }), true);\n`,
        replace:
          `      if (own && records.length > 0) await this.append(encodeFrame({ base: null, records: new Uint8Array(0), hardState: own }), true);\n` +
          `      await this.append(encodeFrame({ base: null, records, hardState: records.length > 0 ? null : own }), true);\n`,
      },
    ],
    expect: ['commit-in-log', 'committed-truncated'],
    maxSeeds: 20,
  },
  {
    // Measured: 88/1000 Raft seeds (storage-recovery), first at seed 7.
    name: 'recovery keeps a torn last frame (no CRC cut)',
    patches: [
      {
        file: 'wal-frame.ts',
        find: `  if (crc32(bytes, at + FRAME_HEADER_BYTES, end) !== view.getUint32(at + 4)) return 'CRC mismatch';\n`,
        replace: `  // planted bug: a frame that fails its CRC is read as whole\n`,
      },
    ],
    expect: ['storage-recovery'],
    maxSeeds: 100,
  },
];

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A patched copy of src/raft + src/trace; returns the copy's root (remove it with removeStorageMutant). */
export function materializeStorageMutant(mutant: StorageMutant): string {
  const scratch = join(REPO, '.tmp');
  mkdirSync(scratch, { recursive: true });
  const root = mkdtempSync(join(scratch, 'storage-mutant-'));
  for (const dir of ['raft', 'trace']) cpSync(join(REPO, 'src', dir), join(root, dir), { recursive: true });
  for (const p of mutant.patches) {
    const path = join(root, 'raft', 'storage', p.file);
    const text = readFileSync(path, 'utf8');
    const at = text.indexOf(p.find);
    if (at < 0 || text.indexOf(p.find, at + 1) >= 0) {
      rmSync(root, { recursive: true, force: true });
      throw new Error(
        `storage mutant "${mutant.name}": its patch of ${p.file} no longer matches src/raft/storage exactly once — update test/sim/storage-mutants.ts:\n${p.find}`,
      );
    }
    writeFileSync(path, text.slice(0, at) + p.replace + text.slice(at + p.find.length));
  }
  return root;
}

export async function loadStorageMutant(root: string): Promise<StorageModule> {
  return (await import(join(root, 'raft', 'storage', 'wal-storage.ts'))) as StorageModule;
}

export function removeStorageMutant(root: string): void {
  rmSync(root, { recursive: true, force: true });
}
