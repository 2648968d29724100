// checkToken (Chubby CheckSequencer style) and writeWithLock against scripted answers.
import { describe, expect, it } from 'vitest';
import type { LockInfo } from '../../../src/client/index.js';
import { LockLostError } from '../../../src/client/index.js';
import { checkToken, writeWithLock, type FencedResource } from '../../../src/fencing/index.js';

const info = (p: Partial<LockInfo>): LockInfo => ({
  key: 'k',
  held: true,
  owner: 'a',
  token: 10n,
  ttlMs: 900,
  lastToken: 10n,
  waiters: 0,
  value: new Uint8Array(0),
  sessionId: 0n,
  index: 40n,
  holders: [],
  limit: 1,
  ...p,
});
const reader = (i: LockInfo) => ({ get: async () => i });

describe('checkToken', () => {
  it('current only for the holder’s token with enough lease left', async () => {
    expect((await checkToken(reader(info({})), 'k', 10n)).current).toBe(true);
    expect(await checkToken(reader(info({})), 'k', 10n, { minRemainingMs: 1000 })).toMatchObject({ current: false, reason: 'EXPIRING' });
    expect(await checkToken(reader(info({ token: 12n, lastToken: 12n })), 'k', 10n)).toMatchObject({
      current: false,
      reason: 'SUPERSEDED',
    });
    expect(await checkToken(reader(info({ held: false, token: 0n, owner: '' })), 'k', 10n)).toMatchObject({
      current: false,
      reason: 'NOT_HELD',
    });
    expect(await checkToken(reader(info({})), 'k', 99n)).toMatchObject({ current: false, reason: 'UNKNOWN_TOKEN' });
  });
});

describe('writeWithLock', () => {
  it('refuses locally when the handle is not ACTIVE, without touching the resource', async () => {
    const writes: bigint[] = [];
    const resource: FencedResource<string> = {
      write: async (_id, token) => (writes.push(token), { accepted: true, lastToken: token }),
      read: async () => null,
    };
    const active = { assertActive: () => 7n } as unknown as Parameters<typeof writeWithLock>[0];
    expect(await writeWithLock(active, resource, 'r', 'v')).toEqual({ accepted: true, lastToken: 7n });
    const lost = {
      assertActive: () => {
        throw new LockLostError('k', 7n, 'DEADLINE', 'no renew');
      },
    } as unknown as Parameters<typeof writeWithLock>[0];
    await expect(writeWithLock(lost, resource, 'r', 'v')).rejects.toThrow(LockLostError);
    expect(writes).toEqual([7n]);
  });
});
