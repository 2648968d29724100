// Simulated clients: each runs one operation at a time — a write (RaftNode.propose) or a linearizable
// read (RaftNode.readBarrier) — against whichever node it believes is the leader, retrying on
// not-leader, failure or timeout. A retried write re-proposes the same bytes, so a value may be applied
// twice; the invariants only rely on what a client was told: a write is ACKNOWLEDGED when the driver it
// proposed to resolved its promise (it applied the entry at the index it was given, in the term it was
// proposed in), and the committed entry at that index must then hold exactly the proposed bytes.
import { NotLeaderError, ProposalTimeoutError, ReadTimeoutError } from '../../src/raft/errors.js';
import type { SimCluster, SimNode } from './cluster.js';
import { entryHash } from './machine.js';
import { SimRng } from './rng.js';
import type { Ack, HistoryEvent, ReadServe } from './workload.js';

export interface ClientOp {
  id: number;
  clientId: number;
  kind: 'write' | 'read';
  data: Uint8Array;
  invokedAt: number;
  /** Acks recorded before this op was invoked (a read must see all of them). */
  ackCountAtInvoke: number;
  /** Highest index of any ack recorded before this op was invoked. */
  maxAckIndexAtInvoke: number;
  /** Highest index any node had applied (hence committed) before this op was invoked. */
  maxCommittedAtInvoke: number;
  attempts: number;
}

export interface Attempt {
  id: number;
  op: ClientOp;
  client: Client;
  node: number;
  /** Filled when the proposal was accepted: the bytes, their hash, and where the leader put them. */
  proposed: Uint8Array | null;
  /** Hash of the proposed entry; null when a server re-encoded the command (served by the workload,
   *  which then checks the entry's content itself: SimWorkload.checkAck). */
  hash: number | null;
  index: number;
  term: number;
  settled: boolean;
}

export interface Client {
  id: number;
  /** Index of the node this client believes is the leader. */
  guess: number;
  /** This client's share of reads: some clients mostly read (and stick to a node that answers
   *  them), some mostly write (and chase the current leader) — the shape that exposes stale reads. */
  readRatio: number;
  op: ClientOp | null;
  attempt: Attempt | null;
}

export class ClientDriver {
  readonly clients: Client[] = [];
  readonly acks: Ack[] = [];
  readonly history: HistoryEvent[] = [];
  readonly rng: SimRng;
  private maxAckIndex = 0;

  private record(ev: HistoryEvent): void {
    this.history.push(ev);
    if (this.sim.workload.observe) this.sim.workload.observe(ev);
  }
  private nextOpId = 1;
  private nextAttemptId = 1;

  constructor(private readonly sim: SimCluster) {
    this.rng = SimRng.derive(sim.seed, 'clients');
  }

  start(): void {
    const n = this.sim.initialIds.length;
    for (let i = 0; i < this.sim.profile.clients; i++) {
      const base = this.sim.workload.readRatio;
      const mix = this.rng.int(3);
      const readRatio = base <= 0 ? 0 : mix === 0 ? Math.max(base, 0.9) : mix === 1 ? Math.min(base, 0.1) : base;
      const c: Client = { id: i, guess: this.rng.int(n), readRatio, op: null, attempt: null };
      this.clients.push(c);
      this.sim.schedule(this.rng.exp(this.sim.profile.thinkMeanMs) + 5, { kind: 'client', client: i, token: 0 });
    }
  }

  // ------------------------------------------------------------------ client side

  /** token 0: start the next op; token < 0: retry op -token after a backoff; else attempt `token` timed out. */
  onTimer(clientId: number, token: number): void {
    const c = this.clients[clientId]!;
    if (token === 0) {
      if (c.op === null && this.sim.phase === 'faults') this.startOp(c);
      return;
    }
    if (token < 0) {
      // end of a retry backoff for op -token
      if (c.op !== null && c.op.id === -token && c.attempt === null) this.sendAttempt(c);
      return;
    }
    const a = c.attempt;
    if (a === null || a.id !== token || a.settled) return;
    // No answer in time: the outcome is unknown. Try again elsewhere (same bytes for a write).
    a.settled = true;
    this.sim.trace.add(this.sim.now, '', `client${c.id} timeout`, `op${a.op.id} attempt${a.id} at n${a.node + 1}`);
    this.sim.workload.cancel?.(a);
    c.guess = this.guessNode();
    this.retry(c, 0);
  }

  private startOp(c: Client): void {
    const sim = this.sim;
    const kind = this.rng.chance(c.readRatio) ? 'read' : 'write';
    const id = this.nextOpId++;
    const data = kind === 'write' ? sim.workload.nextWrite({ rng: this.rng, clientId: c.id, opId: id, now: sim.now }) : new Uint8Array(0);
    c.op = {
      id,
      clientId: c.id,
      kind,
      data,
      invokedAt: sim.now,
      ackCountAtInvoke: this.acks.length,
      maxAckIndexAtInvoke: this.maxAckIndex,
      maxCommittedAtInvoke: sim.facts.maxCommitted,
      attempts: 0,
    };
    this.record(
      kind === 'write'
        ? { type: 'invoke', opId: id, clientId: c.id, kind, time: sim.now, data }
        : { type: 'invoke', opId: id, clientId: c.id, kind, time: sim.now },
    );
    this.sendAttempt(c);
  }

  private sendAttempt(c: Client): void {
    const op = c.op!;
    op.attempts++;
    const a: Attempt = {
      id: this.nextAttemptId++,
      op,
      client: c,
      node: c.guess,
      proposed: null,
      hash: null,
      index: 0,
      term: 0,
      settled: false,
    };
    c.attempt = a;
    this.sim.schedule(this.clientDelay(), { kind: 'request', node: a.node, attempt: a });
    const timeoutMs = this.sim.workload.attemptTimeoutMs?.(op) ?? this.sim.profile.clientTimeoutMs;
    this.sim.schedule(timeoutMs, { kind: 'client', client: c.id, token: a.id });
  }

  private retry(c: Client, backoffMs: number): void {
    if (this.sim.phase !== 'faults') {
      // The run is winding down: the op stays unknown (it may or may not have taken effect).
      this.record({ type: 'info', opId: c.op!.id, clientId: c.id, kind: c.op!.kind, time: this.sim.now });
      c.op = null;
      c.attempt = null;
      return;
    }
    c.attempt = null;
    if (backoffMs <= 0) this.sendAttempt(c);
    else this.sim.schedule(backoffMs, { kind: 'client', client: c.id, token: -c.op!.id });
  }

  onResponse(a: Attempt, outcome: 'ok' | 'redirect' | 'failed' | 'unknown', hint: number, result: unknown): void {
    const c = a.client;
    if (c.attempt !== a || a.settled) return; // a late answer to an attempt the client gave up on
    a.settled = true;
    const sim = this.sim;
    if (outcome === 'ok') {
      const op = a.op;
      if (op.kind === 'write') {
        const ack: Ack = {
          opId: op.id,
          clientId: c.id,
          data: a.proposed!,
          index: a.index,
          term: a.term,
          invokedAt: op.invokedAt,
          ackedAt: sim.now,
          result,
        };
        // index 0: answered without a new entry (a replay, a leader's own decision): nothing to match.
        if (
          a.index !== 0 &&
          (sim.facts.committedTermAt(a.index) !== a.term || (a.hash !== null && sim.facts.committedHashAt(a.index) !== a.hash))
        ) {
          throw sim.violation(
            'acked-committed',
            `client${c.id} op${op.id} acknowledged at ${a.index}/t${a.term}, but the committed entry there is t${sim.facts.committedTermAt(a.index)}`,
          );
        }
        this.acks.push(ack);
        if (a.index > this.maxAckIndex) this.maxAckIndex = a.index;
        sim.stats.acks++;
        if (sim.workload.checkAck) sim.check(sim.workload.checkAck(ack, this.acks), 'workload-ack');
      } else {
        sim.stats.readsOk++;
      }
      this.record({ type: 'ok', opId: op.id, clientId: c.id, kind: op.kind, time: sim.now, index: a.index, term: a.term, result });
      sim.trace.add(sim.now, '', `client${c.id} ok`, `op${op.id} ${op.kind} @${a.index}/t${a.term}`);
      c.op = null;
      c.attempt = null;
      const think = sim.workload.nextOpDelayMs?.(c.id, sim.now);
      sim.schedule(think === undefined ? this.rng.exp(sim.profile.thinkMeanMs) : think, { kind: 'client', client: c.id, token: 0 });
      return;
    }
    if (a.op.kind === 'read' && outcome === 'failed') sim.stats.readsFailed++;
    if (outcome === 'redirect') {
      c.guess = hint >= 0 ? hint : this.guessNode();
      this.retry(c, 1 + this.rng.float() * 4);
    } else {
      if (this.rng.chance(0.5)) c.guess = this.guessNode();
      this.retry(c, 2 + this.rng.float() * 20);
    }
  }

  /** A random server among those that exist (a spare id's slot is unborn until it is added). */
  private guessNode(): number {
    const nodes = this.sim.nodes;
    if (this.sim.membership === null) return this.rng.int(nodes.length);
    const born = nodes.filter((x) => x.born);
    return born[this.rng.int(born.length)]!.idx;
  }

  private clientDelay(): number {
    return 0.05 + this.rng.float() * this.sim.profile.clientDelayMaxMs;
  }

  private respond(a: Attempt, outcome: 'ok' | 'redirect' | 'failed' | 'unknown', hint = -1, result: unknown = undefined): void {
    if (this.rng.chance(this.sim.profile.clientLoss)) return; // lost response: the client will time out
    this.sim.schedule(this.clientDelay(), { kind: 'response', attempt: a, outcome, hint, result });
  }

  // ------------------------------------------------------------------ server side (at a node)

  onRequest(node: SimNode, a: Attempt): void {
    const sim = this.sim;
    const rn = node.rn;
    if (!node.up || rn === null) return; // connection refused: the client times out
    const inc = node.incarnation;
    const alive = () => node.up && node.incarnation === inc;
    const op = a.op;
    if (sim.workload.serve) {
      sim.workload.serve(node, a, (o) => {
        if (!alive()) return;
        if (o.outcome === 'ok') {
          a.proposed = op.data;
          a.index = o.index ?? 0;
          a.term = a.index === 0 ? 0 : (sim.facts.committedTermAt(a.index) ?? -1);
          a.hash = null; // the server stamped the command itself: the workload's checkAck compares content
        }
        this.respond(a, o.outcome, o.hint ?? -1, o.result);
      });
      return;
    }
    const timeoutMs = sim.profile.clientTimeoutMs;
    if (op.kind === 'write') {
      let data = op.data;
      if (sim.workload.prepareProposal) {
        const prepared = sim.workload.prepareProposal(data, { node: node.id, nodeNow: sim.nodeNow(node), term: node.raft.status().term });
        if (prepared === null) {
          this.respond(a, 'failed'); // the node refuses for now (e.g. a lock leader not ready yet): retry
          return;
        }
        data = prepared;
      }
      sim.stats.proposals++;
      sim.trace.add(sim.now, node.id, 'propose', `op${op.id} client${a.client.id}`);
      rn.propose(data, timeoutMs).then(
        sim.guard(({ index, result }: { index: number; result: unknown }) => {
          if (!alive()) return;
          a.proposed = data;
          a.index = index;
          a.term = sim.facts.committedTermAt(index) ?? -1;
          a.hash = entryHash({ index, term: a.term, kind: 'normal', data });
          this.respond(a, 'ok', -1, result);
        }),
        sim.guard((err: unknown) => {
          if (!alive()) return;
          if (err instanceof NotLeaderError) this.respond(a, 'redirect', err.leaderId === null ? -1 : sim.indexOf(err.leaderId));
          else if (err instanceof ProposalTimeoutError) this.respond(a, 'unknown');
          else this.respond(a, 'failed');
        }),
      );
      return;
    }
    sim.trace.add(sim.now, node.id, 'readBarrier', `op${op.id}`);
    rn.readBarrier(timeoutMs).then(
      sim.guard((index: number) => {
        if (alive()) this.serveRead(node, a, index);
      }),
      sim.guard((err: unknown) => {
        if (!alive()) return;
        if (err instanceof NotLeaderError) this.respond(a, 'redirect', err.leaderId === null ? -1 : sim.indexOf(err.leaderId));
        else this.respond(a, err instanceof ReadTimeoutError ? 'unknown' : 'failed');
      }),
    );
  }

  nodeCrashed(_node: SimNode): void {
    // Waiting clients simply time out, as they would against a dead server.
  }

  /** The driver's read barrier passed at `index` (it has applied at least that): serve, checking
   *  linearizability. */
  private serveRead(node: SimNode, a: Attempt, index: number): void {
    const sim = this.sim;
    const op = a.op;
    if (index > node.applied)
      sim.fail('read-barrier', node, `read op${op.id} released at readIndex ${index} before the node applied it (applied ${node.applied})`);
    if (index < op.maxAckIndexAtInvoke) {
      sim.fail(
        'linearizable-read',
        node,
        `read op${op.id} got readIndex ${index}, but a write acknowledged before it was invoked sits at index ${op.maxAckIndexAtInvoke}`,
      );
    }
    // Stricter than client-level linearizability, and still true of a correct ReadIndex: an entry
    // applied anywhere before the read began is committed, and the confirmed leader's commit index
    // (after it committed an entry of its own term, §8) covers every committed entry.
    if (index < op.maxCommittedAtInvoke) {
      sim.fail(
        'read-index-fresh',
        node,
        `read op${op.id} got readIndex ${index}, but index ${op.maxCommittedAtInvoke} was already committed (applied by some node) when the read was invoked`,
      );
    }
    a.index = index;
    a.term = node.raft.status().term;
    const serve: ReadServe = {
      opId: op.id,
      clientId: op.clientId,
      node: node.id,
      readIndex: index,
      appliedIndex: node.applied,
      invokedAt: op.invokedAt,
    };
    if (sim.workload.checkRead)
      sim.check(sim.workload.checkRead(node.sm, serve, this.acks.slice(0, op.ackCountAtInvoke)), 'linearizable-read', node);
    const value = sim.workload.readValue ? sim.workload.readValue(node.sm, serve) : undefined;
    this.respond(a, 'ok', -1, value);
  }
}
