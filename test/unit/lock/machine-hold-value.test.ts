// A hold's value (SPEC "Value"): stored with the hold, returned by Get, carried by a waiter into the hold it
// is handed, gone when the hold ends, kept by renew, and in the snapshot.
import { describe, expect, it } from 'vitest';
import { LockMachine, decodeCommand, encodeCommand } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

const text = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));

describe('hold value', () => {
  it('is stored with the hold, kept by renew, and gone when the hold ends', () => {
    const feed = new Feed();
    const a = feed.at(1000).delayed('k', 'a', 500, 0, { value: 'http://10.0.0.7:8080' });
    expect(text(feed.machine.valueOf('k'))).toBe('http://10.0.0.7:8080');
    feed.renew('k', 'a', a.token, 500);
    expect(text(feed.machine.valueOf('k'))).toBe('http://10.0.0.7:8080');
    feed.release('k', 'a', a.token);
    expect(feed.machine.valueOf('k')).toBeUndefined();
    // A new hold without a value has none (not the old one's).
    feed.acquire('k', 'b', 500);
    expect(feed.machine.valueOf('k')).toBeUndefined();
  });

  it('a waiter carries its value into the hold it is handed; a snapshot keeps both', () => {
    const feed = new Feed();
    const a = feed.at(1000).delayed('k', 'a', 500, 0, { value: 'first' });
    feed.delayed('k', 'w', 500, 0, { waitMs: 60_000, requestId: 'rw', value: 'second' });
    const bytes = feed.machine.snapshot();
    expect(bytes[3]).toBe(5);
    const restored = new Feed(LockMachine.restore(bytes));
    expect(restored.machine.snapshot()).toEqual(bytes);
    for (const f of [feed, restored]) {
      expect(text(f.machine.valueOf('k'))).toBe('first');
      f.release('k', 'a', a.token);
      expect(text(f.machine.valueOf('k'))).toBe('second');
    }
  });

  it('round-trips on the wire (tag 11), and a decoded value is a copy, not a view of the entry', () => {
    const command = {
      type: 'acquire',
      timeMs: 5,
      key: 'k',
      owner: 'o',
      ttlMs: 100,
      requestId: 'r',
      value: new Uint8Array([1, 2, 3]),
    } as const;
    const bytes = encodeCommand(command);
    expect(bytes[0]).toBe(11);
    const decoded = decodeCommand(bytes);
    expect(decoded).toEqual(command);
    const value = (decoded as { value: Uint8Array }).value;
    expect(value.buffer).not.toBe(bytes.buffer);
  });
});
