import { describe, expect, it } from 'vitest';
import { CallAbort, type CallSignal } from '../../../src/wire/call-signal.js';
import { CANCELLED, DETACHED, isDetached } from '../../../src/transport/call-end.js';

describe('CallAbort (the per-call signal of a multiplexed stream)', () => {
  it('is not aborted until abort(); then carries the first reason only', () => {
    const a = new CallAbort();
    expect(a.aborted).toBe(false);
    expect(a.reason).toBeUndefined();
    a.abort(DETACHED);
    a.abort(CANCELLED);
    expect(a.aborted).toBe(true);
    expect(a.reason).toBe(DETACHED);
    expect(isDetached(a)).toBe(true);
  });

  it('calls every listener once, in the order added, and none that was removed', () => {
    const a = new CallAbort();
    const calls: string[] = [];
    const one = () => calls.push('one');
    const two = () => calls.push('two');
    const three = () => calls.push('three');
    a.addEventListener('abort', one);
    a.addEventListener('abort', two);
    a.addEventListener('abort', three);
    a.removeEventListener('abort', two);
    a.abort(CANCELLED);
    a.abort(CANCELLED);
    expect(calls).toEqual(['one', 'three']);
  });

  it('keeps the order when the first listener was removed before another was added', () => {
    const a = new CallAbort();
    const calls: string[] = [];
    const one = () => calls.push('one');
    a.addEventListener('abort', one);
    a.addEventListener('abort', () => calls.push('two'));
    a.removeEventListener('abort', one);
    a.addEventListener('abort', () => calls.push('three'));
    a.abort(CANCELLED);
    expect(calls).toEqual(['two', 'three']);
  });

  it('never calls a listener added after the abort (as AbortSignal does)', () => {
    const a = new CallAbort();
    a.abort(CANCELLED);
    let called = false;
    a.addEventListener('abort', () => (called = true));
    expect(called).toBe(false);
  });

  it('runs the other listeners when one throws, then throws the first error', () => {
    const a = new CallAbort();
    const calls: string[] = [];
    a.addEventListener('abort', () => {
      throw new Error('first');
    });
    a.addEventListener('abort', () => calls.push('second'));
    expect(() => a.abort(CANCELLED)).toThrow('first');
    expect(calls).toEqual(['second']);
  });

  it('behaves as an AbortSignal where one is given instead (the same listener rules)', () => {
    const both: [CallSignal, () => void][] = [];
    const c = new AbortController();
    both.push([c.signal, () => c.abort(CANCELLED)]);
    const a = new CallAbort();
    both.push([a, () => a.abort(CANCELLED)]);
    const seen = both.map(([signal, abort]) => {
      const calls: string[] = [];
      const gone = () => calls.push('removed');
      signal.addEventListener('abort', () => calls.push('kept'), { once: true });
      signal.addEventListener('abort', gone, { once: true });
      signal.removeEventListener('abort', gone);
      abort();
      signal.addEventListener('abort', () => calls.push('late'), { once: true });
      return { calls, aborted: signal.aborted, reason: signal.reason };
    });
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]).toEqual({ calls: ['kept'], aborted: true, reason: CANCELLED });
  });
});
