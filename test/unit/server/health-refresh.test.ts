// A node reports SERVING as soon as its role or leader changes in a way that serves (refresh), not at the
// next look of its timer, which now looks only four times per election timeout (fewer wake-ups at idle).
import { describe, expect, it } from 'vitest';
import type { HealthImplementation } from 'grpc-health-check';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { HealthReporter } from '../../../src/server/client-api/health.js';

function recordingHealth(): { health: HealthImplementation; status: Map<string, string> } {
  const status = new Map<string, string>();
  const health = { setStatus: (service: string, s: string) => void status.set(service, s) } as unknown as HealthImplementation;
  return { health, status };
}

describe('HealthReporter.refresh', () => {
  it('turns SERVING at once when the judgement changes, without waiting for the timer', () => {
    const { health, status } = recordingHealth();
    let judgement = { serving: false, reason: 'no leader' };
    const reporter = new HealthReporter(health, () => judgement, silentNodeLogger, 'n1');
    reporter.start(3_600_000); // a timer that will not fire during the test
    expect(status.get('leasehold.v1.Lock')).toBe('NOT_SERVING');
    judgement = { serving: true, reason: 'follower of n2' };
    reporter.refresh();
    expect(status.get('')).toBe('SERVING');
    expect(status.get('leasehold.v1.Lock')).toBe('SERVING');
    reporter.stop();
    expect(status.get('leasehold.v1.Lock')).toBe('NOT_SERVING');
  });

  it('does nothing before start or after stop (a stopped node stays NOT_SERVING)', () => {
    const { health, status } = recordingHealth();
    const reporter = new HealthReporter(health, () => ({ serving: true, reason: 'leader with a quorum' }), silentNodeLogger, 'n1');
    reporter.refresh();
    expect(status.get('')).toBe('NOT_SERVING');
    reporter.start(3_600_000);
    expect(status.get('')).toBe('SERVING');
    reporter.stop();
    reporter.refresh();
    expect(status.get('')).toBe('NOT_SERVING');
  });
});
