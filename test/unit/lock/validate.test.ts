import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LOCK_LIMITS,
  validateAcquire,
  validateGet,
  validateOpenSession,
  validateSessionCall,
  validateRelease,
  validateRenew,
  ValidationError,
} from '../../../src/lock/index.js';
import type { Validated } from '../../../src/lock/index.js';

function errorOf<T>(result: Validated<T>): ValidationError {
  if (result.ok)
    throw new Error(`expected a validation error, got ${JSON.stringify(result.value, (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`);
  expect(result.error).toBeInstanceOf(ValidationError);
  return result.error;
}

const acquire = {
  key: 'invoice:42',
  owner: 'worker-a',
  ttlMs: 10_000,
  waitMs: 0,
  requestId: 'r1',
  lockDelayMs: 0,
  sessionId: 0,
  limit: 1,
  shared: false,
};
const renew = { key: 'invoice:42', owner: 'worker-a', token: '41', ttlMs: 10_000, requestId: '' };
const release = { key: 'invoice:42', owner: 'worker-a', token: 41n };

describe('validateAcquire', () => {
  it('accepts a good request and normalises it', () => {
    expect(validateAcquire(acquire)).toEqual({ ok: true, value: acquire });
    expect(validateAcquire({ key: 'k', owner: 'o', ttlMs: '100' })).toEqual({
      ok: true,
      value: { key: 'k', owner: 'o', ttlMs: 100, waitMs: 0, requestId: '', lockDelayMs: 0, sessionId: 0, limit: 1, shared: false },
    });
  });

  it('limit and shared: 0 and 1 are a mutex, at most 1000, shared only with limit 1, each error naming its field', () => {
    expect(validateAcquire({ ...acquire, limit: 0 })).toMatchObject({ ok: true, value: { limit: 1, shared: false } });
    expect(validateAcquire({ ...acquire, limit: 1000, shared: false })).toMatchObject({ ok: true, value: { limit: 1000 } });
    expect(validateAcquire({ ...acquire, shared: true })).toMatchObject({ ok: true, value: { limit: 1, shared: true } });
    expect(errorOf(validateAcquire({ ...acquire, limit: 1001 }))).toMatchObject({
      field: 'limit',
      message: expect.stringMatching(/between 0 and 1000/),
    });
    expect(errorOf(validateAcquire({ ...acquire, limit: -1 }))).toMatchObject({ field: 'limit' });
    expect(errorOf(validateAcquire({ ...acquire, limit: 1.5 }))).toMatchObject({ field: 'limit' });
    expect(errorOf(validateAcquire({ ...acquire, shared: 'yes' }))).toMatchObject({ field: 'shared' });
    expect(errorOf(validateAcquire({ ...acquire, limit: 3, shared: true }))).toMatchObject({
      field: 'shared',
      message: expect.stringMatching(/not a semaphore/),
    });
  });

  it('under a session: ttl_ms must be 0 (named), session_id must be a safe positive integer', () => {
    expect(validateAcquire({ key: 'k', owner: 'o', ttlMs: '0', sessionId: '42' })).toEqual({
      ok: true,
      value: { key: 'k', owner: 'o', ttlMs: 0, waitMs: 0, requestId: '', lockDelayMs: 0, sessionId: 42, limit: 1, shared: false },
    });
    expect(errorOf(validateAcquire({ key: 'k', owner: 'o', ttlMs: '100', sessionId: '42' }))).toMatchObject({
      field: 'ttl_ms',
      message: expect.stringMatching(/must be 0 for a hold under a session/),
    });
    expect(errorOf(validateAcquire({ key: 'k', owner: 'o', ttlMs: '0' }))).toMatchObject({ field: 'ttl_ms' });
    expect(errorOf(validateAcquire({ key: 'k', owner: 'o', ttlMs: '0', sessionId: '-1' }))).toMatchObject({ field: 'session_id' });
    expect(errorOf(validateAcquire({ key: 'k', owner: 'o', ttlMs: '0', sessionId: '9007199254740993' }))).toMatchObject({
      field: 'session_id',
    });
  });

  it('OpenSession and RenewSession/CloseSession name their bad fields', () => {
    expect(validateOpenSession({ owner: 'o', ttlMs: '1000', requestId: 'r' })).toEqual({
      ok: true,
      value: { owner: 'o', ttlMs: 1000, requestId: 'r', lockDelayMs: 0 },
    });
    expect(errorOf(validateOpenSession({ owner: '', ttlMs: '1000' })).field).toBe('owner');
    expect(errorOf(validateOpenSession({ owner: 'o', ttlMs: '5' })).field).toBe('ttl_ms');
    expect(errorOf(validateOpenSession({ owner: 'o', ttlMs: '1000', lockDelayMs: '999999999' })).field).toBe('lock_delay_ms');
    expect(validateSessionCall({ sessionId: '7' })).toEqual({ ok: true, value: { sessionId: 7, requestId: '', owner: '' } });
    expect(errorOf(validateSessionCall({ sessionId: '0' }))).toMatchObject({ field: 'session_id', message: 'session_id is required' });
    expect(errorOf(validateSessionCall({ sessionId: 'x' })).field).toBe('session_id');
  });

  it('names the key: missing, empty, too long in UTF-8 bytes, wrong type, lone surrogate', () => {
    for (const key of [undefined, '', 'k'.repeat(513), 'й'.repeat(257), 42, '\uDC00']) {
      const error = errorOf(validateAcquire({ ...acquire, key }));
      expect(error.field).toBe('key');
      expect(error.message).toMatch(/^key /);
    }
    expect(validateAcquire({ ...acquire, key: 'й'.repeat(256) }).ok).toBe(true); // 512 bytes exactly
    expect(errorOf(validateAcquire({ ...acquire, key: '' })).message).toBe('key must be 1..512 bytes of UTF-8, got 0');
  });

  it('names the owner', () => {
    for (const owner of [undefined, '', 'o'.repeat(257), {}]) {
      expect(errorOf(validateAcquire({ ...acquire, owner })).field).toBe('owner');
    }
    expect(validateAcquire({ ...acquire, owner: 'o'.repeat(256) }).ok).toBe(true);
  });

  it('names ttl_ms with the allowed range', () => {
    expect(errorOf(validateAcquire({ ...acquire, ttlMs: 5 })).message).toBe('ttl_ms must be between 100 and 3600000, got 5');
    for (const ttlMs of [undefined, 0, 99, 3_600_001, 1.5, -100, 'abc', '1e3', NaN, Infinity, 2 ** 60, true]) {
      const error = errorOf(validateAcquire({ ...acquire, ttlMs }));
      expect(error.field).toBe('ttl_ms');
      expect(error.message).toMatch(/^ttl_ms /);
    }
    expect(validateAcquire({ ...acquire, ttlMs: 100 }).ok).toBe(true);
    expect(validateAcquire({ ...acquire, ttlMs: 3_600_000n }).ok).toBe(true);
  });

  it('uses the limits it is given', () => {
    const limits = { ...DEFAULT_LOCK_LIMITS, minTtlMs: 1000, maxTtlMs: 2000 };
    expect(errorOf(validateAcquire({ ...acquire, ttlMs: 999 }, limits)).message).toBe('ttl_ms must be between 1000 and 2000, got 999');
    expect(validateAcquire({ ...acquire, ttlMs: 2000 }, limits).ok).toBe(true);
  });

  it('names wait_ms and request_id', () => {
    expect(errorOf(validateAcquire({ ...acquire, waitMs: -1 })).field).toBe('wait_ms');
    expect(errorOf(validateAcquire({ ...acquire, waitMs: DEFAULT_LOCK_LIMITS.maxWaitMs + 1 })).field).toBe('wait_ms');
    expect(errorOf(validateAcquire({ ...acquire, requestId: 'r'.repeat(129) })).field).toBe('request_id');
    expect(errorOf(validateAcquire({ ...acquire, requestId: 7 })).field).toBe('request_id');
    expect(validateAcquire({ ...acquire, requestId: 'r'.repeat(128) }).ok).toBe(true);
  });

  it('reports the first bad field in proto order', () => {
    expect(errorOf(validateAcquire({ key: '', owner: '', ttlMs: 0 })).field).toBe('key');
    expect(errorOf(validateAcquire({ key: 'k', owner: '', ttlMs: 0 })).field).toBe('owner');
  });
});

describe('validateRenew / validateRelease: token', () => {
  it('accepts bigint, decimal string and safe-integer number up to 2^64-1', () => {
    expect(validateRenew(renew)).toEqual({ ok: true, value: { ...renew, token: 41n } });
    expect(validateRelease({ ...release, token: '18446744073709551615' })).toMatchObject({ ok: true, value: { token: 2n ** 64n - 1n } });
    expect(validateRelease({ ...release, token: 7 })).toMatchObject({ ok: true, value: { token: 7n, requestId: '' } });
  });

  it('rejects 0, negatives, non-integers, > 2^64-1, lossy numbers and junk, naming token', () => {
    const bad: unknown[] = [
      undefined,
      null,
      0,
      0n,
      '0',
      -1n,
      '-5',
      1.5,
      '1.5',
      '2e3',
      ' 5',
      '0x10',
      '',
      2n ** 64n,
      '18446744073709551616',
      2 ** 60,
      'x',
      {},
    ];
    for (const token of bad) {
      const error = errorOf(validateRelease({ ...release, token }));
      expect(error.field, String(token)).toBe('token');
      expect(error.message).toMatch(/^token /);
    }
    expect(errorOf(validateRenew({ ...renew, token: '0' })).message).toBe('token must be a positive integer, got 0');
    expect(errorOf(validateRenew({ ...renew, token: 2n ** 64n })).message).toMatch(/at most 18446744073709551615/);
  });

  it('checks the other renew/release fields too', () => {
    expect(errorOf(validateRenew({ ...renew, ttlMs: 50 })).field).toBe('ttl_ms');
    expect(errorOf(validateRenew({ ...renew, owner: '' })).field).toBe('owner');
    expect(errorOf(validateRelease({ ...release, key: '' })).field).toBe('key');
    expect(errorOf(validateRelease({ ...release, requestId: 'r'.repeat(200) })).field).toBe('request_id');
  });
});

describe('validateGet', () => {
  it('checks the key only', () => {
    expect(validateGet({ key: 'k' })).toEqual({ ok: true, value: { key: 'k' } });
    expect(errorOf(validateGet({})).field).toBe('key');
  });
});

describe('control characters (issue 11: keys with newlines or tabs printed ambiguously)', () => {
  it('refuses C0, DEL and C1 characters in key, owner and request_id, naming the field and the character', () => {
    expect(errorOf(validateAcquire({ ...acquire, key: 'a\nb' })).message).toBe(
      'key must not contain control characters (U+000A at position 1)',
    );
    expect(errorOf(validateAcquire({ ...acquire, key: 'tab\there' })).field).toBe('key');
    expect(errorOf(validateAcquire({ ...acquire, owner: 'w\u007f' })).field).toBe('owner');
    expect(errorOf(validateRenew({ ...renew, requestId: 'r\u0085' })).field).toBe('request_id');
    expect(errorOf(validateRelease({ ...release, key: '\u0000' })).field).toBe('key');
    expect(errorOf(validateGet({ key: 'x\r' })).field).toBe('key');
  });

  it('accepts printable non-ASCII text', () => {
    expect(validateAcquire({ ...acquire, key: 'звіт:2026 ✓', owner: 'müller' }).ok).toBe(true);
  });
});

describe('validateAcquire: lock_delay_ms', () => {
  it('is 0 when absent, at most maxLockDelayMs, and an error names the field', () => {
    expect(validateAcquire({ key: 'k', owner: 'o', ttlMs: 100, lockDelayMs: '2000' })).toMatchObject({
      ok: true,
      value: { lockDelayMs: 2000 },
    });
    for (const lockDelayMs of [-1, 60_001, 'x', 1.5]) {
      const r = validateAcquire({ key: 'k', owner: 'o', ttlMs: 100, lockDelayMs });
      expect(r.ok, String(lockDelayMs)).toBe(false);
      if (!r.ok) expect(r.error.field).toBe('lock_delay_ms');
    }
  });
});

describe('validateAcquire: value', () => {
  it('takes bytes up to maxValueBytes; an empty value is none; anything else names the field', () => {
    expect(validateAcquire({ key: 'k', owner: 'o', ttlMs: 100, value: Buffer.from('x'.repeat(1024)) })).toMatchObject({ ok: true });
    expect(validateAcquire({ key: 'k', owner: 'o', ttlMs: 100, value: Buffer.alloc(0) })).toMatchObject({
      ok: true,
      value: { lockDelayMs: 0 },
    });
    expect((validateAcquire({ key: 'k', owner: 'o', ttlMs: 100, value: Buffer.alloc(0) }) as { value: object }).value).not.toHaveProperty(
      'value',
    );
    for (const value of [Buffer.alloc(1025), 'text', 42]) {
      const r = validateAcquire({ key: 'k', owner: 'o', ttlMs: 100, value });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.field).toBe('value');
    }
  });
});
