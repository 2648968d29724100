// What clients do and what their results must satisfy — the pluggable half of the simulator.
// The Raft-level invariants (election safety, log matching, committed entries never change, ...) live
// in the harness; a workload adds the state machine, the commands clients propose, and the checks that
// only make sense for that machine (e.g. fencing tokens only grow, for the lock machine).
import type { Entry, NodeId } from '../../src/raft/core/types.js';
import { ValueSetMachine, decodeValueId, encodeValue, type SimStateMachine } from './machine.js';
import type { SimRng } from './rng.js';
import type { Attempt, ClientOp } from './clients.js';
import type { SimNode } from './node.js';

/** A served operation's outcome. `index` is the log entry whose result this is, 0 when the server answered
 *  without a new entry (a replay or a leader's own decision). */
export interface ServeOutcome {
  outcome: 'ok' | 'redirect' | 'failed' | 'unknown';
  hint?: number;
  result?: unknown;
  index?: number;
}

/** A write the client saw applied, at (index, term), on the leader it proposed to. */
export interface Ack {
  opId: number;
  clientId: number;
  data: Uint8Array;
  index: number;
  term: number;
  /** Virtual ms: when the op was first invoked, and when the client received the acknowledgement. */
  invokedAt: number;
  ackedAt: number;
  /** What SimStateMachine.apply returned for this entry on the acknowledging node. */
  result: unknown;
}

/** A ReadIndex read being served: the node applied at least `readIndex`. */
export interface ReadServe {
  opId: number;
  clientId: number;
  node: NodeId;
  readIndex: number;
  appliedIndex: number;
  invokedAt: number;
}

export interface WriteContext {
  rng: SimRng;
  clientId: number;
  opId: number;
  /** Virtual ms (the client's clock = simulation time). */
  now: number;
}

export interface ProposeContext {
  node: NodeId;
  /** The proposing node's own clock in virtual ms (simulation time plus a per-node skew). */
  nodeNow: number;
  term: number;
}

export interface SimWorkload<M extends SimStateMachine = SimStateMachine> {
  readonly name: string;
  /** Fraction of client operations that are linearizable reads (ReadIndex); the rest are writes. */
  readonly readRatio: number;
  /** A fresh state machine: for `node`'s new incarnation, or (no node) a scratch one to check a snapshot. */
  createStateMachine(node?: SimNode): M;
  /** The command bytes of a new write operation (re-proposed unchanged on retries). */
  nextWrite(ctx: WriteContext): Uint8Array;
  /** Optional: rewrite the command at the leader just before propose (e.g. stamp the leader's time).
   *  null = the node refuses it for now (e.g. a new lock leader whose term-start entry has not applied
   *  yet, like the lock service's ensureLeaderReady): the client sees a failure and retries. */
  prepareProposal?(data: Uint8Array, ctx: ProposeContext): Uint8Array | null;
  /** Optional: serve a client operation at `node` in place of the default (propose its bytes / a read
   *  barrier on the driver) — e.g. through the real lock service, forwarding to the leader as a simulated
   *  hop. Call `reply` at most once (never, if the node or the answer is lost); a dead node's reply is
   *  dropped by the harness. */
  serve?(node: SimNode, attempt: Attempt, reply: (outcome: ServeOutcome) => void): void;
  /** Optional: the client gave up on `attempt` (its own timeout): tell the server, which may drop a waiter. */
  cancel?(attempt: Attempt): void;
  /** Optional: how long a client waits for one attempt of `op` (default profile.clientTimeoutMs). */
  attemptTimeoutMs?(op: ClientOp): number | undefined;
  /** Optional: a node's driver is up (a new incarnation) / went down. */
  nodeStarted?(node: SimNode): void;
  nodeCrashed?(node: SimNode): void;
  /** Optional: node i's own clock at simulation time `now` (default: now plus the node's skew); the
   *  driver's env.nowMs() reads it. */
  nodeClock?(nodeIdx: number, now: number): number;
  /** Optional: virtual ms before a client starts its next operation once one completed (default: random
   *  with mean profile.thinkMeanMs; undefined = the default), e.g. a lock client renewing every ttl/3, or
   *  one that stalls past its TTL. */
  nextOpDelayMs?(clientId: number, now: number): number | undefined;
  /** Entries the node's driver proposes by itself while leader (not client commands): called once
   *  when the node becomes leader ('elected', e.g. the lock machine's leader-epoch entry that extends
   *  leases) and on every tick while leader ('tick', e.g. lease-expiry housekeeping). */
  leaderProposals?(ctx: ProposeContext & { reason: 'elected' | 'tick'; sm: M }): Uint8Array[];
  /** A read served at `read.node` whose machine is `sm`: `ackedBefore` are the writes acknowledged
   *  before the read was invoked. Return a violation message or null. */
  checkRead?(sm: M, read: ReadServe, ackedBefore: readonly Ack[]): string | null;
  /** After every applied entry on every node (keep it cheap). */
  checkApply?(node: NodeId, entry: Entry, result: unknown, sm: M): string | null;
  /** After an acknowledgement arrives at a client (e.g. tokens issued in increasing order). */
  checkAck?(ack: Ack, allAcks: readonly Ack[]): string | null;
  /** After the liveness phase, on each converged node. */
  checkFinal?(sm: M, acks: readonly Ack[]): string | null;
  /** The value a served read returns (recorded in the history as `value`), e.g. a lock's holder. */
  readValue?(sm: M, read: ReadServe): unknown;
  /** Every client-visible history event as it happens (invoke / ok / info), e.g. so a lock client can
   *  remember the token it holds and decide its next command. */
  observe?(event: HistoryEvent): void;
  /** Once at the end, over the whole client history (e.g. a WGL linearizability check). */
  checkHistory?(history: readonly HistoryEvent[], acks: readonly Ack[]): string | null;
}

/** One line of the client-visible history (Jepsen style): every op is invoked, then either completes
 *  (ok) or ends unknown (info: timed out / gave up — it may or may not have taken effect). */
export interface HistoryEvent {
  type: 'invoke' | 'ok' | 'info';
  opId: number;
  clientId: number;
  kind: 'write' | 'read';
  /** Virtual ms. */
  time: number;
  /** The write's command bytes (invoke). */
  data?: Uint8Array;
  /** ok: where the write was applied / the read index served. */
  index?: number;
  term?: number;
  /** ok write: what SimStateMachine.apply returned; ok read: workload.readValue(...). */
  result?: unknown;
}

/** The default workload: unique values appended through Raft, checked with a ValueSetMachine. */
export class ValueWorkload implements SimWorkload<ValueSetMachine> {
  readonly name = 'values';
  constructor(readonly readRatio = 0.25) {}

  createStateMachine(): ValueSetMachine {
    return new ValueSetMachine();
  }

  nextWrite(ctx: WriteContext): Uint8Array {
    // Mostly small entries, now and then a big one, so byte limits and snapshot chunking get exercised.
    const padding = ctx.rng.chance(0.1) ? ctx.rng.range(64, 400) : ctx.rng.int(24);
    return encodeValue(ctx.opId, ctx.clientId, padding);
  }

  checkRead(sm: ValueSetMachine, read: ReadServe, ackedBefore: readonly Ack[]): string | null {
    for (const ack of ackedBefore) {
      const id = decodeValueId(ack.data);
      if (!sm.has(id)) {
        return `stale read: op ${read.opId} served at ${read.node} (readIndex ${read.readIndex}, applied ${read.appliedIndex}) misses value ${id} acknowledged at index ${ack.index}/t${ack.term} before the read was invoked`;
      }
    }
    return null;
  }

  checkFinal(sm: ValueSetMachine, acks: readonly Ack[]): string | null {
    for (const ack of acks) {
      const id = decodeValueId(ack.data);
      if (!sm.has(id)) return `acknowledged value ${id} (index ${ack.index}/t${ack.term}) missing from the final state`;
    }
    return null;
  }
}
