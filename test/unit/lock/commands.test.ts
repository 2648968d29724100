import { describe, expect, it } from 'vitest';
import {
  BUILD_LEVEL,
  CommandDecodeError,
  CommandEncodeError,
  decodeCommand,
  encodeCommand,
  LockMachine,
  MAX_UINT64,
  NEWEST_COMMAND_TAG,
  UnknownCommandError,
  WIRE_LIMITS,
} from '../../../src/lock/index.js';
import type { LockCommand } from '../../../src/lock/index.js';
import { SimRng } from '../../sim/rng.js';

const NOW = 1_720_000_000_000;

const samples: LockCommand[] = [
  { type: 'acquire', timeMs: NOW, key: 'invoice:42', owner: 'worker-a', ttlMs: 10_000, requestId: 'r-1' },
  { type: 'acquire', timeMs: 0, key: 'k', owner: 'o', ttlMs: 1, requestId: '' },
  { type: 'renew', timeMs: NOW, key: 'ключ/🔒', owner: 'воркер', token: 41n, ttlMs: 30_000, requestId: '' },
  { type: 'renew', timeMs: NOW, key: 'k', owner: 'o', token: MAX_UINT64, ttlMs: WIRE_LIMITS.maxTtlMs, requestId: 'x'.repeat(128) },
  { type: 'release', timeMs: NOW, key: '\uFEFFbom-key', owner: 'o', token: 1n, requestId: 'rid' },
  { type: 'expire', timeMs: NOW, key: 'k'.repeat(512), token: 2n ** 53n + 1n },
  { type: 'termStart', timeMs: NOW },
  { type: 'checkpoint', timeMs: WIRE_LIMITS.maxTimeMs },
  { type: 'clusterLevel', timeMs: NOW, level: 2 },
  { type: 'memberRan', timeMs: NOW, memberId: 'node-7' },
  { type: 'revoke', timeMs: NOW, key: 'k', token: 0n },
  { type: 'revoke', timeMs: NOW, key: 'k', token: 7n, owner: 'admin-cn', requestId: 'rv-1' },
  { type: 'revoke', timeMs: NOW, key: 'k', token: 0n, owner: '', requestId: '' },
  { type: 'renews', timeMs: NOW, renews: [{ key: 'k', owner: 'o', token: 1n, ttlMs: 1 }] },
  {
    type: 'renews',
    timeMs: NOW,
    renews: [
      { key: 'ключ/🔒', owner: 'воркер', token: MAX_UINT64, ttlMs: WIRE_LIMITS.maxTtlMs },
      { key: 'ключ/🔒', owner: 'воркер', token: 41n, ttlMs: 30_000 },
      { key: 'k'.repeat(512), owner: 'o'.repeat(256), token: 2n ** 53n + 1n, ttlMs: 5 },
    ],
  },
];

function decodeFailure(bytes: Uint8Array): CommandDecodeError {
  try {
    decodeCommand(bytes);
  } catch (error) {
    if (error instanceof CommandDecodeError) return error;
    throw error;
  }
  throw new Error(`expected ${Array.from(bytes)} to be rejected`);
}

describe('command codec', () => {
  it.each(samples.map((command) => [command.type, command] as const))('round-trips %s exactly', (_type, command) => {
    const bytes = encodeCommand(command);
    expect(decodeCommand(bytes)).toEqual(command);
    // Canonical: re-encoding the decoded command gives the same bytes.
    expect(encodeCommand(decodeCommand(bytes))).toEqual(bytes);
  });

  it('is compact: a typical acquire is under 40 bytes, a checkpoint 7', () => {
    const bytes = encodeCommand(samples[0]!);
    expect(bytes.length).toBeLessThan(40);
    expect(encodeCommand({ type: 'checkpoint', timeMs: NOW }).length).toBe(7);
  });

  it("rejects an empty entry, truncation and trailing bytes with CommandDecodeError; an unknown tag is UnknownCommandError (a newer build's)", () => {
    expect(decodeFailure(new Uint8Array(0)).message).toMatch(/unexpected end/);
    expect(() => decodeCommand(Uint8Array.of(99, 0))).toThrow(UnknownCommandError);
    expect(() => decodeCommand(Uint8Array.of(NEWEST_COMMAND_TAG + 1))).toThrow(
      `lock command tag ${NEWEST_COMMAND_TAG + 1} is newer than this build reads (cluster level ${BUILD_LEVEL}, command tags up to ${NEWEST_COMMAND_TAG})`,
    );
    expect(NEWEST_COMMAND_TAG).toBe(24);
    // A build of level 1 (versions.ts) reads neither tag 19 (clusterLevel) nor tag 20 (memberRan).
    const raise = encodeCommand({ type: 'clusterLevel', timeMs: NOW, level: 2 });
    expect(() => decodeCommand(raise, 1)).toThrow(
      'lock command tag 19 is newer than this build reads (cluster level 1, command tags up to 18)',
    );
    expect(decodeCommand(raise, 2)).toEqual({ type: 'clusterLevel', timeMs: NOW, level: 2 });
    expect(decodeFailure(Uint8Array.of(19, 0, 1)).message).toMatch(/cluster level 1 is outside/);
    const ran = encodeCommand({ type: 'memberRan', timeMs: NOW, memberId: 'n3' });
    expect(() => decodeCommand(ran, 1)).toThrow(
      'lock command tag 20 is newer than this build reads (cluster level 1, command tags up to 18)',
    );
    expect(decodeCommand(ran)).toEqual({ type: 'memberRan', timeMs: NOW, memberId: 'n3' });
    expect(decodeFailure(Uint8Array.of(20, 0, 0)).message).toMatch(/memberId is empty/);
    // A revoke with a request id is tag 23 (level 5); without one, tag 18, which every level reads.
    const once = encodeCommand({ type: 'revoke', timeMs: NOW, key: 'k', token: 0n, owner: 'ops', requestId: 'r' });
    expect(once[0]).toBe(23);
    expect(() => decodeCommand(once, 4)).toThrow(
      'lock command tag 23 is newer than this build reads (cluster level 4, command tags up to 22)',
    );
    expect(encodeCommand({ type: 'revoke', timeMs: NOW, key: 'k', token: 0n })[0]).toBe(18);
    expect(() => encodeCommand({ type: 'revoke', timeMs: NOW, key: 'k', token: 0n, owner: 'ops' })).toThrow(/owner needs a requestId/);
    expect(() => encodeCommand({ type: 'revoke', timeMs: NOW, key: 'k', token: 0n, owner: '', requestId: 'x'.repeat(129) })).toThrow(
      /requestId/,
    );
    expect(() => encodeCommand({ type: 'memberRan', timeMs: NOW, memberId: 'x'.repeat(64) })).toThrow(/memberId must be 1..63 bytes/);
    // The renews of one turn are tag 24 (level 7): a build of level 6 does not read it.
    const renews = encodeCommand({ type: 'renews', timeMs: NOW, renews: [{ key: 'k', owner: 'o', token: 3n, ttlMs: 100 }] });
    expect(renews[0]).toBe(24);
    expect(() => decodeCommand(renews, 6)).toThrow(
      'lock command tag 24 is newer than this build reads (cluster level 6, command tags up to 23)',
    );
    for (let cut = 1; cut < renews.length; cut++) decodeFailure(renews.subarray(0, cut));
    expect(decodeFailure(Uint8Array.of(...renews, 0)).message).toMatch(/trailing/);
    const acquire = encodeCommand(samples[0]!);
    for (let cut = 1; cut < acquire.length; cut++) decodeFailure(acquire.subarray(0, cut));
    expect(decodeFailure(Uint8Array.of(...acquire, 0)).message).toMatch(/trailing/);
  });

  it('rejects over-long varints, tokens above 2^64-1 and token 0', () => {
    // checkpoint with timeMs 0 written as two bytes (0x80 0x00): not canonical.
    expect(decodeFailure(Uint8Array.of(6, 0x80, 0x00)).message).toMatch(/over-long/);
    const expireOf = (tokenBytes: number[]) => Uint8Array.of(4, 0, 1, 0x6b, ...tokenBytes);
    expect(decodeCommand(expireOf([1]))).toEqual({ type: 'expire', timeMs: 0, key: 'k', token: 1n });
    expect(decodeFailure(expireOf([0])).message).toMatch(/token is 0/);
    // 2^64 as LEB128: nine 0x80 bytes then 0x02.
    expect(decodeFailure(expireOf([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02])).message).toMatch(/2\^64/);
  });

  it('decodes a renews entry only with 1..1024 well-formed renews, and refuses to encode one without', () => {
    const one = [0x01, 0x6b, 0x01, 0x6f, 0x03, 0x64]; // key 'k', owner 'o', token 3, ttlMs 100
    expect(decodeCommand(Uint8Array.of(24, 0, 1, ...one))).toEqual({
      type: 'renews',
      timeMs: 0,
      renews: [{ key: 'k', owner: 'o', token: 3n, ttlMs: 100 }],
    });
    expect(decodeFailure(Uint8Array.of(24, 0, 0)).message).toMatch(/renews count 0 is outside \[1, 1024\]/);
    // 1025 as LEB128: a count past the bound is refused before any renew is read.
    expect(decodeFailure(Uint8Array.of(24, 0, 0x81, 0x08, ...one)).message).toMatch(/renews count 1025/);
    // A count that promises more renews than the bytes hold.
    expect(decodeFailure(Uint8Array.of(24, 0, 2, ...one)).message).toMatch(/unexpected end/);
    expect(decodeFailure(Uint8Array.of(24, 0, 1, 0x01, 0x6b, 0x01, 0x6f, 0x00, 0x64)).message).toMatch(/token is 0/);
    expect(decodeFailure(Uint8Array.of(24, 0, 1, 0x01, 0x6b, 0x01, 0x6f, 0x03, 0x00)).message).toMatch(/ttlMs 0/);
    expect(decodeFailure(Uint8Array.of(24, 0, 1, 0x00, 0x01, 0x6f, 0x03, 0x64)).message).toMatch(/key is empty/);
    const item = { key: 'k', owner: 'o', token: 3n, ttlMs: 100 };
    expect(() => encodeCommand({ type: 'renews', timeMs: NOW, renews: [] })).toThrow(/renews must hold 1..1024 renews, got 0/);
    expect(() =>
      encodeCommand({ type: 'renews', timeMs: NOW, renews: Array.from({ length: WIRE_LIMITS.maxRenewsPerEntry + 1 }, () => item) }),
    ).toThrow(/got 1025/);
    expect(() => encodeCommand({ type: 'renews', timeMs: NOW, renews: [item, { ...item, token: 0n }] })).toThrow(/renews\[1\]: token/);
    expect(() => encodeCommand({ type: 'renews', timeMs: NOW, renews: [{ ...item, owner: '' }] })).toThrow(/renews\[0\]: owner/);
    expect(decodeCommand(encodeCommand({ type: 'renews', timeMs: NOW, renews: Array.from({ length: 1024 }, () => item) }))).toMatchObject({
      type: 'renews',
    });
  });

  it('rejects invalid UTF-8, empty key/owner and fields over their byte limits', () => {
    // acquire, time 0, key = [0xff] (invalid UTF-8)
    expect(decodeFailure(Uint8Array.of(1, 0, 1, 0xff, 1, 0x6f, 1, 0)).message).toMatch(/UTF-8/);
    // CESU-style encoded lone surrogate U+D800 is not valid UTF-8 either
    expect(decodeFailure(Uint8Array.of(1, 0, 3, 0xed, 0xa0, 0x80, 1, 0x6f, 1, 0)).message).toMatch(/UTF-8/);
    expect(decodeFailure(Uint8Array.of(1, 0, 0, 1, 0x6f, 1, 0)).message).toMatch(/key is empty/);
    expect(decodeFailure(Uint8Array.of(1, 0, 1, 0x6b, 0, 1, 0)).message).toMatch(/owner is empty/);
    expect(decodeFailure(Uint8Array.of(1, 0, 1, 0x6b, 1, 0x6f, 0, 0)).message).toMatch(/ttlMs 0/);
    const longKey = new Uint8Array(2 + 513);
    longKey.set([0x81, 0x04]); // 513 as LEB128
    expect(decodeFailure(Uint8Array.of(1, 0, ...longKey)).message).toMatch(/exceeds the limit of 512/);
  });

  it('refuses to encode a command that breaks the wire limits, naming the field', () => {
    const base = samples[0] as Extract<LockCommand, { type: 'acquire' }>;
    const bad: [Partial<typeof base>, RegExp][] = [
      [{ key: '' }, /key/],
      [{ key: 'k'.repeat(513) }, /key/],
      [{ owner: '' }, /owner/],
      [{ owner: '\uD800' }, /owner.*surrogate/],
      [{ ttlMs: 0 }, /ttlMs/],
      [{ ttlMs: 1.5 }, /ttlMs/],
      [{ requestId: 'r'.repeat(129) }, /requestId/],
      [{ timeMs: -1 }, /timeMs/],
    ];
    for (const [patch, message] of bad) {
      expect(() => encodeCommand({ ...base, ...patch })).toThrow(CommandEncodeError);
      expect(() => encodeCommand({ ...base, ...patch })).toThrow(message);
    }
    expect(() => encodeCommand({ type: 'release', timeMs: 0, key: 'k', owner: 'o', token: 0n, requestId: '' })).toThrow(/token/);
    expect(() => encodeCommand({ type: 'expire', timeMs: 0, key: 'k', token: MAX_UINT64 + 1n })).toThrow(/token/);
  });

  it('never throws anything but CommandDecodeError (or UnknownCommandError, exactly for a tag it does not know) on random bytes', () => {
    const rng = new SimRng(7);
    const random = () => rng.float();
    let decoded = 0;
    for (let i = 0; i < 5000; i++) {
      const bytes = Uint8Array.from({ length: Math.floor(random() * 24) }, () => Math.floor(random() * 256));
      if (random() < 0.5 && bytes.length > 0) bytes[0] = 1 + Math.floor(random() * 6); // valid tag half the time
      try {
        const command = decodeCommand(bytes);
        expect(encodeCommand(command)).toEqual(bytes); // anything accepted is canonical
        decoded++;
      } catch (error) {
        const known = bytes.length > 0 && bytes[0]! <= NEWEST_COMMAND_TAG && bytes[0]! > 0;
        expect(error).toBeInstanceOf(bytes.length > 0 && !known ? UnknownCommandError : CommandDecodeError);
      }
    }
    expect(decoded).toBeGreaterThan(0);
  });
});

describe('applying garbage', () => {
  it('is a no-op error result, identical on two replicas, and the next entry applies normally', () => {
    const replicas = [new LockMachine(), new LockMachine()];
    const entries = [
      encodeCommand({ type: 'acquire', timeMs: 1000, key: 'k', owner: 'a', ttlMs: 500, requestId: '' }),
      Uint8Array.of(2, 0xad, 0xbe, 0xef), // a renew's tag, then garbage
      new Uint8Array(0),
      Uint8Array.of(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), // huge timeMs varint
      encodeCommand({ type: 'acquire', timeMs: 1100, key: 'k', owner: 'b', ttlMs: 500, requestId: '' }),
    ];
    const results = replicas.map((machine) => entries.map((data, i) => machine.apply(i + 1, 1, data)));
    expect(results[0]).toEqual(results[1]);
    expect(results[0]![1]).toMatchObject({ type: 'error', index: 2, code: 'MALFORMED_COMMAND' });
    expect(results[0]![2]).toMatchObject({ type: 'error', index: 3, code: 'MALFORMED_COMMAND' });
    expect(results[0]![3]).toMatchObject({ type: 'error', index: 4, code: 'MALFORMED_COMMAND' });
    // Garbage neither moved time nor touched the lease: b is still refused at 1100 < 1500.
    expect(results[0]![4]).toMatchObject({ type: 'acquire', acquired: false, holderOwner: 'a', holderTtlMs: 400 });
    expect(replicas[0]!.appliedIndex).toBe(5);
    expect(replicas[0]!.digest()).toBe(replicas[1]!.digest());
  });

  it('an entry with a tag this build does not read stops the apply (UnknownCommandError) and changes nothing', () => {
    const machine = new LockMachine();
    machine.apply(1, 1, encodeCommand({ type: 'acquire', timeMs: 1000, key: 'k', owner: 'a', ttlMs: 500, requestId: '' }));
    const before = machine.digest();
    expect(() => machine.apply(2, 1, Uint8Array.of(NEWEST_COMMAND_TAG + 1, 0))).toThrow(UnknownCommandError);
    expect(machine.appliedIndex).toBe(1);
    expect(machine.digest()).toBe(before);
  });

  it('applyCommand checks the wire limits too', () => {
    const machine = new LockMachine();
    const result = machine.applyCommand(1, 1, { type: 'acquire', timeMs: 0, key: '', owner: 'o', ttlMs: 10, requestId: '' });
    expect(result).toMatchObject({ type: 'error', code: 'MALFORMED_COMMAND' });
    expect(machine.appliedIndex).toBe(1);
    expect(machine.leaseCount).toBe(0);
  });
});
