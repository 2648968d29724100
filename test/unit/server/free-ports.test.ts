// The process tests' port picker (test/integration/harness.ts freePorts): ports a node binds later must not
// come from the kernel's range for outgoing connections' local ports, where any connection opened meanwhile
// may take one (the node then fails with EADDRINUSE and its cluster never forms).
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ephemeralRange, freePorts } from '../../integration/harness.js';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

describe('freePorts', () => {
  it('gives distinct ports that can be bound right after', async () => {
    const ports = await freePorts(12);
    expect(ports).toHaveLength(12);
    expect(new Set(ports).size).toBe(12);
    const servers = await Promise.all(ports.map(listen)); // rejects if any is taken
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  });

  it.skipIf(process.platform !== 'linux')('picks below the range the kernel takes outgoing connections’ local ports from', async () => {
    const range = ephemeralRange();
    expect(range, 'ip_local_port_range is readable on Linux').not.toBeNull();
    expect(range![0]).toBeGreaterThan(11_000); // this machine's range leaves room below it (32768 by default)
    const ports = await freePorts(40);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(range![0]);
    }
  });

  it.skipIf(process.platform !== 'linux')('skips a port that is taken, and one it already gave', async () => {
    const range = ephemeralRange()!;
    const below = range[0] - 10_000;
    const [port] = await freePorts(1);
    const held = await listen(port!);
    try {
      const [other] = await freePorts(1); // free now, and not the held one
      const draws = [port!, port!, other!, other!].map((p) => (p - 10_000 + 0.5) / below);
      // Draws: the held port (taken: skipped), `other` (given), then `other` again until the tries run out (given
      // already, and still held by the probe: skipped), so the second port comes from port 0.
      let at = 0;
      const ports = await freePorts(2, () => draws[Math.min(at++, draws.length - 1)]!);
      expect(ports[0]).toBe(other);
      expect(ports).not.toContain(port);
      expect(new Set(ports).size).toBe(2);
    } finally {
      await new Promise<void>((r) => held.close(() => r()));
    }
  });
});
