// The ceiling of a node-to-node channel's reconnect backoff against the election timeout. While a channel's
// connection attempts fail, grpc fails every call on it at once until its next attempt; at a restart of the
// whole cluster every node's channels fail while the peers load their state, so the first pre-vote after
// all are up waits for that attempt. A ceiling of 2 s made that wait 0.6-2.4 s (restart-timing at 1M locks).
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../../src/config/schema.js';
import { NODE_CHANNEL_BACKOFF } from '../../../src/transport/peer-link.js';

describe('node channel backoff', () => {
  it('retries a failed channel within half the shortest default election timeout', () => {
    const shortestElectionMs = DEFAULT_SETTINGS.raft.tickMs * DEFAULT_SETTINGS.raft.electionTicks;
    expect(NODE_CHANNEL_BACKOFF['grpc.max_reconnect_backoff_ms']).toBeLessThanOrEqual(shortestElectionMs / 2);
    expect(NODE_CHANNEL_BACKOFF['grpc.initial_reconnect_backoff_ms']).toBeLessThanOrEqual(
      NODE_CHANNEL_BACKOFF['grpc.max_reconnect_backoff_ms'],
    );
  });
});
