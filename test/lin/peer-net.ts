// The network BETWEEN the nodes of a chaos run: one TCP proxy per ordered pair of node ids (i -> j), through
// which node i reaches node j — its Raft stream to j, the client calls it forwards to j, the questions it
// asks j. Each node is told to dial its peers there with nodes[].peerDialOverrides (node-local; the
// replicated configuration keeps the real addresses), so the proxy i->j carries exactly what i sends to j
// (and the answers on those connections: gRPC replies of j's own Raft messages travel on j's stream to i,
// through the proxy j->i). Cutting i->j alone is therefore a one-way cut: j still talks to i.
//
// Faults are link states: cut (a black hole), delay, loss (connection resets, see FaultProxy). Everything
// runs on loopback. Links exist for every id the run may ever use (the spare ids of the membership nemesis
// too), so a node added later is dialled through its proxies from the start.
import { FaultProxy } from '../e2e/proxy.js';
import type { SimRng } from '../sim/rng.js';

export type Link = readonly [from: string, to: string];

export class PeerNet {
  private constructor(private readonly links: Map<string, FaultProxy>) {}

  /** Proxies for every ordered pair of `ids`. They exist before the cluster does (its config names them), so
   *  they point nowhere until pointAt(); a proxy connects to its target only when a connection arrives. */
  static async create(ids: readonly string[], rng: SimRng): Promise<PeerNet> {
    const links = new Map<string, FaultProxy>();
    for (const from of ids) {
      for (const to of ids) {
        if (from === to) continue;
        const p = await FaultProxy.start('127.0.0.1:1');
        p.random = () => rng.float();
        links.set(key(from, to), p);
      }
    }
    return new PeerNet(links);
  }

  pointAt(endpointOf: (id: string) => string): void {
    for (const [k, p] of this.links) p.retarget(endpointOf(k.slice(k.indexOf('>') + 1)));
  }

  /** The YAML flow mapping of nodes[].peerDialOverrides for `from` (one line, for the harness's nodeYaml). */
  overridesYaml(from: string): string {
    const entries = [...this.links]
      .filter(([k]) => k.startsWith(`${from}>`))
      .map(([k, p]) => `${k.slice(from.length + 1)}: "${p.address}"`);
    return `peerDialOverrides: { ${entries.join(', ')} }`;
  }

  /** Every link from `from` to `to`, both directions when `both`. */
  static between(a: readonly string[], b: readonly string[], both = true): Link[] {
    const out: Link[] = [];
    for (const x of a) for (const y of b) if (x !== y) out.push([x, y], ...(both ? [[y, x] as const] : []));
    return out;
  }

  cut(links: readonly Link[]): void {
    for (const l of links) this.proxy(l).setMode('block');
  }

  /** Reopen `links` (their connections that lost bytes are reset, so the peers reconnect cleanly). */
  restore(links: readonly Link[]): void {
    for (const l of links) {
      const p = this.proxy(l);
      if (p.mode !== 'pass') p.setMode('pass');
    }
  }

  delay(links: readonly Link[], ms: number): void {
    for (const l of links) this.proxy(l).delay = { up: ms, down: ms };
  }

  loss(links: readonly Link[], resetChance: number): void {
    for (const l of links) this.proxy(l).resetChance = resetChance;
  }

  /** Every link back to normal: open, no delay, no loss. */
  healAll(): void {
    for (const p of this.links.values()) {
      p.delay = { up: 0, down: 0 };
      p.resetChance = 0;
      if (p.mode !== 'pass') p.setMode('pass');
    }
  }

  stats(): { lossResets: number; swallowedChunks: number; connections: number } {
    let lossResets = 0;
    let swallowedChunks = 0;
    let connections = 0;
    for (const p of this.links.values()) {
      lossResets += p.stats.lossResets;
      swallowedChunks += p.stats.swallowedChunks;
      connections += p.stats.connections;
    }
    return { lossResets, swallowedChunks, connections };
  }

  async close(): Promise<void> {
    await Promise.all([...this.links.values()].map((p) => p.close().catch(() => undefined)));
  }

  private proxy([from, to]: Link): FaultProxy {
    const p = this.links.get(key(from, to));
    if (!p) throw new Error(`no peer link ${from}->${to}`);
    return p;
  }
}

function key(from: string, to: string): string {
  return `${from}>${to}`;
}
