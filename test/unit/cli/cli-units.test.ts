// The CLI's pure pieces: durations, tokens, the exit-code mapping every client command shares, and the
// watch that tells an unreachable cluster from a busy one.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { InvalidRequestError, LockNotAcquiredError, UnavailableError, LeaseholdError } from '../../../src/client/errors.js';
import { RpcError } from '../../../src/client/rpc.js';
import { parseToken } from '../../../src/cli/args.js';
import { formatDuration, isoTime, parseDuration } from '../../../src/cli/duration.js';
import { EXIT, RefusedError, UnreachableError, UsageError, exitCodeFor, exitCodeForStatus } from '../../../src/cli/exit-codes.js';
import { ReachWatch } from '../../../src/cli/reach.js';

describe('durations', () => {
  it('need a unit; a bare number is refused with the likely meaning', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('10s')).toBe(10_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1m30s')).toBe(90_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('0')).toBe(0);
    expect(() => parseDuration('5', '--ttl')).toThrow('--ttl: "5" has no unit — did you mean 5s? (write 5ms for milliseconds');
    expect(() => parseDuration('5 sec', '--wait')).toThrow(/--wait: expected a duration such as 500ms, 10s/);
    expect(() => parseDuration('-1s')).toThrow(/expected a duration/);
  });

  it('print as durations and ISO dates, not epoch milliseconds', () => {
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(4250)).toBe('4.2s');
    expect(formatDuration(125_000)).toBe('2m5s');
    expect(formatDuration(3_780_000)).toBe('1h3m');
    expect(isoTime('1767225600000')).toBe('2026-01-01T00:00:00.000Z');
    expect(isoTime('0')).toBe('');
  });
});

describe('tokens', () => {
  it('are whole numbers 1..2^64-1, kept exact as strings', () => {
    expect(parseToken('18446744073709551615')).toBe('18446744073709551615');
    expect(parseToken(' 42 ')).toBe('42');
    for (const bad of ['abc', '0', '-1', '1.5', '18446744073709551616', ''])
      expect(() => parseToken(bad)).toThrow(/--token: expected the fencing token/);
  });
});

describe('exit codes (SPEC: 0 done, 1 usage/INVALID_ARGUMENT, 2 no answer, 3 refused, 4 denied)', () => {
  it('map gRPC status codes', () => {
    expect(exitCodeForStatus(grpc.status.OK)).toBe(0);
    expect(exitCodeForStatus(grpc.status.INVALID_ARGUMENT)).toBe(EXIT.USAGE);
    for (const c of [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.INTERNAL])
      expect(exitCodeForStatus(c)).toBe(EXIT.UNAVAILABLE);
    for (const c of [grpc.status.FAILED_PRECONDITION, grpc.status.RESOURCE_EXHAUSTED]) expect(exitCodeForStatus(c)).toBe(EXIT.REFUSED);
    for (const c of [grpc.status.PERMISSION_DENIED, grpc.status.UNAUTHENTICATED]) expect(exitCodeForStatus(c)).toBe(EXIT.DENIED);
  });

  it('map the errors the client and the CLI throw', () => {
    expect(exitCodeFor(new UsageError('x'))).toBe(1);
    expect(exitCodeFor(new RpcError(grpc.status.INVALID_ARGUMENT, 'ttl_ms: too small'))).toBe(1);
    expect(exitCodeFor(new InvalidRequestError('x', grpc.status.INVALID_ARGUMENT))).toBe(1);
    expect(exitCodeFor(new InvalidRequestError('x', grpc.status.FAILED_PRECONDITION))).toBe(3);
    expect(exitCodeFor(new UnreachableError(['h:1'], 'refused'))).toBe(2);
    expect(exitCodeFor(new UnavailableError('x'))).toBe(2);
    expect(exitCodeFor(new LockNotAcquiredError('k', 'o', 10, 0))).toBe(3);
    expect(exitCodeFor(new RefusedError('x'))).toBe(3);
    // A client error wrapping a server status keeps the status's code.
    expect(exitCodeFor(new LeaseholdError('x', { cause: new RpcError(grpc.status.PERMISSION_DENIED, 'owner') }))).toBe(4);
  });
});

describe('ReachWatch', () => {
  const refused = 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1';

  it('aborts once every endpoint refused connections for the grace period, naming them', () => {
    const said: string[] = [];
    let now = 1000;
    const w = new ReachWatch(
      ['h:1', 'h:2'],
      (m) => said.push(m),
      30,
      () => now,
    );
    w.attemptFailed('h:1', grpc.status.UNAVAILABLE, refused);
    w.attemptFailed('h:2', grpc.status.UNAVAILABLE, refused);
    expect(w.signal.aborted).toBe(false);
    expect(said[0]).toMatch(/cannot connect to h:1, h:2 \(connection refused: ECONNREFUSED 127\.0\.0\.1:1\)/);
    now += 29; // still inside the grace: no verdict yet
    w.attemptFailed('h:1', grpc.status.UNAVAILABLE, refused);
    expect(w.signal.aborted).toBe(false);
    now += 1; // the grace is over
    w.attemptFailed('h:1', grpc.status.UNAVAILABLE, refused);
    expect(w.signal.aborted).toBe(true);
    expect(w.unreachable?.message).toMatch(/tried h:1, h:2; .*Check --endpoints/);
  });

  it('keeps waiting while any node answers, even UNAVAILABLE (an election)', async () => {
    const w = new ReachWatch(['h:1', 'h:2'], () => {}, 0);
    w.attemptFailed('h:1', grpc.status.UNAVAILABLE, refused);
    w.attemptFailed('h:2', grpc.status.UNAVAILABLE, 'no leader elected yet; retry');
    w.attemptFailed('h:1', grpc.status.UNAVAILABLE, refused);
    expect(w.signal.aborted).toBe(false);
  });
});
