// Client-side validation: refused before anything is sent, with InvalidRequestError (as the README says),
// and endpoint mistakes named with what to write instead.
import { describe, expect, it } from 'vitest';
import { InvalidRequestError, LeaseholdError, LockClient } from '../../../src/client/index.js';
import { endpointProblem } from '../../../src/client/endpoints.js';
import { FakeRpc } from './fake-rpc.js';

describe('endpoint syntax', () => {
  it.each([
    ['127.0.0.1:7001', null],
    ['n1.example.com:7001', null],
    ['[::1]:7001', null],
    ['localhost', /"localhost" has no port: did you mean localhost:7001\?/],
    ['localhost:', /"localhost:" has no port/],
    ['http://127.0.0.1:7001', /without a scheme or path, e\.g\. 127\.0\.0\.1:7001/],
    ['grpc://n1', /e\.g\. n1:7001/],
    ['::1', /IPv6 address needs brackets and a port, e\.g\. \[::1\]:7001/],
    ['h:99999', /port must be a number from 1 to 65535/],
    [':7001', /host is missing/],
  ])('%s', (endpoint, expected) => {
    const problem = endpointProblem(endpoint);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toMatch(expected);
  });
});

describe('LockClient refuses bad arguments with InvalidRequestError', () => {
  it('endpoints without a port or with a scheme', () => {
    expect(() => new LockClient({ endpoints: 'localhost' })).toThrow(InvalidRequestError);
    expect(() => new LockClient({ endpoints: 'http://h:1,h:2' })).toThrow(/endpoints: "http:\/\/h:1": give host:port/);
    expect(() => new LockClient({ endpoints: '' })).toThrow(InvalidRequestError);
  });

  it('an empty key, a ttl or wait that is not a whole number of ms — and nothing is sent', async () => {
    const rpc = new FakeRpc();
    const client = new LockClient({ endpoints: 'fake:1', rpc });
    for (const [key, opts] of [
      ['', { ttlMs: 1000 }],
      ['k', { ttlMs: 0 }],
      ['k', { ttlMs: 1.5 }],
      ['k', { ttlMs: 1000, waitMs: -1 }],
    ] as const) {
      const err = await client.acquire(key, opts).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidRequestError);
      expect(err).toBeInstanceOf(LeaseholdError);
    }
    expect(rpc.calls).toHaveLength(0);
    client.close();
  });
});
