// Ports of a long chaos run. The harness picks free ports once, at the start; a node that is down (killed,
// or a spare id not yet added) leaves its port unbound, and on a shared machine anything may take it
// meanwhile — another cluster, or simply the local end of one of the thousands of outgoing connections the
// run's own proxies make. A node that then cannot listen is a fact about the machine, not about leasehold.
// So: a spare id's port is held by a placeholder listener until that id is started, and a node that exits
// at start-up with EADDRINUSE is started again (a few times, a little later), and said so in the log.
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { TestCluster } from '../integration/harness.js';

export class NodePorts {
  private readonly held = new Map<string, Server>();
  /** Spare ids whose port was already taken when we tried to hold it: never started. */
  readonly lost: string[] = [];

  constructor(
    private readonly cluster: TestCluster,
    private readonly log: (msg: string) => void,
  ) {}

  /** Hold the port of every spare id (the ids membership changes will add). */
  async holdSpares(): Promise<void> {
    for (const id of this.cluster.spareIds) {
      const port = Number(this.cluster.endpoint(id).split(':').pop());
      // Whoever connects meanwhile (the leader dialling a member added but not started yet) is reset at
      // once, as by a closed port: a socket accepted and left silent would stall its HTTP/2 handshake.
      const server = createServer((socket) => socket.resetAndDestroy());
      const ok = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false));
        server.listen(port, '127.0.0.1', () => resolve(true));
      });
      if (ok) this.held.set(id, server);
      else this.lost.push(id);
    }
    if (this.lost.length)
      this.log(`ports: the ports of ${this.lost.join(',')} were taken before the run could hold them; those ids are not used`);
  }

  /** Start `id` (from the join file for a spare id), releasing its held port first. Returns at once; a start
   *  that dies with EADDRINUSE within 3 s is retried in the background (up to 5 times) unless it was started
   *  again meanwhile. */
  start(id: string, opts: { join: boolean }, attempt = 1): ChildProcess | null {
    const holder = this.held.get(id);
    if (holder) {
      this.held.delete(id);
      holder.close();
    }
    let child: ChildProcess;
    try {
      child = this.cluster.start(id, opts);
    } catch {
      return null; // already running (started by someone else meanwhile)
    }
    const startedAt = Date.now();
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', () => {
      if (Date.now() - startedAt > 3000 || !/EADDRINUSE/.test(stderr)) return;
      if (attempt >= 5) return this.log(`ports: ${id} still cannot listen (EADDRINUSE) after ${attempt} starts; left down`);
      this.log(`ports: ${id} could not listen (EADDRINUSE: something took its port while it was down); starting it again`);
      setTimeout(() => {
        if (this.cluster.procs.has(id)) return;
        const again = this.start(id, opts, attempt + 1);
        if (again) this.log(`node ${id} started pid ${again.pid} (again)`);
      }, 500 * attempt);
    });
    return child;
  }

  async close(): Promise<void> {
    await Promise.all([...this.held.values()].map((s) => new Promise<void>((r) => s.close(() => r()))));
    this.held.clear();
  }
}
