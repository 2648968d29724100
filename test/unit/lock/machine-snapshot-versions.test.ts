// Snapshots written by earlier versions still load. The fixture is a version-2 snapshot written by the
// machine before snapshots were sectioned (main at 2e7ffd3, scripts in the commit message of this test):
// restored, it must be the same state the current machine reaches from the same entries — the same
// version-3 bytes — and keep answering as before (leases, last tokens, remembered requests).
import { describe, expect, it } from 'vitest';
import { LockMachine, SnapshotDecodeError } from '../../../src/lock/index.js';

const V2 =
  '4c4853020786e0f4bf87320180e0f4bf87320105616c6963650200066f72646572730002c0b802fef004000100077265706f72747300078827904e' +
  '0000010008696e766f696365730303000505616c6963650261310500066f7264657273000102b0ea01b1caf6bf8732000003626f620262310400' +
  '08696e766f69636573000103a09c01a2fcf5bf8732000003626f62026232030208696e766f69636573030100056361726f6c0263310200066f72' +
  '64657273000000000005616c696365adea0105616c6963650261320101066f72646572730201c0b802c598f7bf873200';

/** The entries the fixture was made from, on the current machine. */
function sameHistory(): LockMachine {
  const m = new LockMachine();
  const t = 1_720_000_000_000;
  let i = 0;
  m.applyCommand(++i, 1, { type: 'termStart', timeMs: t });
  m.applyCommand(++i, 1, { type: 'acquire', timeMs: t + 1, key: 'orders', owner: 'alice', ttlMs: 30000, requestId: 'a1' });
  m.applyCommand(++i, 1, { type: 'acquire', timeMs: t + 2, key: 'invoices', owner: 'bob', ttlMs: 20000, requestId: 'b1' });
  m.applyCommand(++i, 1, { type: 'release', timeMs: t + 3, key: 'invoices', owner: 'bob', token: 3n, requestId: 'b2' });
  m.applyCommand(++i, 1, { type: 'acquire', timeMs: t + 4, key: 'orders', owner: 'carol', ttlMs: 1000, requestId: 'c1' });
  m.applyCommand(++i, 1, { type: 'renew', timeMs: t + 5, key: 'orders', owner: 'alice', token: 2n, ttlMs: 40000, requestId: 'a2' });
  m.applyCommand(++i, 1, { type: 'acquire', timeMs: t + 6, key: 'reports', owner: 'alice', ttlMs: 5000, requestId: '' });
  return m;
}

describe('snapshot versions', () => {
  it('a version-2 snapshot restores to the state the same entries give today', () => {
    const v2 = Uint8Array.from(Buffer.from(V2, 'hex'));
    expect(v2[3]).toBe(2);
    const restored = LockMachine.restore(v2);
    const current = sameHistory();
    const bytes = restored.snapshot();
    expect(bytes[3]).toBe(3);
    expect(Buffer.from(bytes).equals(Buffer.from(current.snapshot()))).toBe(true);
    expect(restored.get('orders')).toMatchObject({ held: true, owner: 'alice', token: 2n, expiresAtMs: 1_720_000_040_005 });
    expect(restored.get('invoices')).toMatchObject({ held: false, lastToken: 3n });
    expect(restored.get('reports')).toMatchObject({ held: true, owner: 'alice', token: 7n });
    expect(restored.rememberedAcquire('carol', 'c1', 'orders')).toMatchObject({ acquired: false, holderOwner: 'alice' });
    expect(restored.dedupSize).toBe(current.dedupSize);
  });

  it('a version from the future is refused with a clear error', () => {
    const bytes = sameHistory().snapshot();
    const future = bytes.slice();
    future[3] = 10;
    expect(() => LockMachine.restore(future)).toThrow(SnapshotDecodeError);
    expect(() => LockMachine.restore(future)).toThrow(
      /unsupported snapshot version 10: this build reads versions 1-9; a newer leasehold wrote it/,
    );
  });
});
