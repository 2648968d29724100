// Lock/Watch refusals are counted (leasehold_lock_operations_total{op="watch",outcome="invalid"}): the
// callback fires for a request the validator refuses, and only then.
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { serveWatch, type WatchCall, type WatchServing } from '../../../src/server/client-api/watch-server.js';

function fakeCall(request: object): WatchCall & { errors: grpc.ServiceError[] } {
  const call = Object.assign(new EventEmitter(), { request, errors: [] as grpc.ServiceError[] });
  call.on('error', (e: grpc.ServiceError) => call.errors.push(e));
  return call as unknown as WatchCall & { errors: grpc.ServiceError[] };
}

const serving = { readBarrier: () => new Promise<number>(() => {}), barrierTimeoutMs: 100 } as unknown as WatchServing;

describe('Lock/Watch refusals', () => {
  it('counts a request naming both a key and a prefix as invalid, and answers INVALID_ARGUMENT', () => {
    let invalid = 0;
    const call = fakeCall({ key: 'k', prefix: 'p/', after_index: '0', include_renewals: false });
    serveWatch(call, serving, () => invalid++);
    expect(invalid).toBe(1);
    expect(call.errors.map((e) => e.code)).toEqual([grpc.status.INVALID_ARGUMENT]);
  });

  it('does not count a valid request (it waits for its read barrier)', () => {
    let invalid = 0;
    const call = fakeCall({ key: 'k', prefix: '', after_index: '0', include_renewals: false });
    serveWatch(call, serving, () => invalid++);
    expect(invalid).toBe(0);
    expect(call.errors).toEqual([]);
  });
});
