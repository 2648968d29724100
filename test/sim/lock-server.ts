// The server side of the lock simulation: every simulated node runs the REAL lock service
// (src/lock-on-raft/lock-service.ts over the pure lock leader, src/lock/leader) on its real RaftNode, with the
// node's clock and virtual-time scheduler. A client call reaches one node; a follower forwards it to the
// leader it knows by the shipped forward-once rule (src/server/client-api/forward-once.ts, as grpc-server.ts does), and
// that hop is a simulated message with its own delay, loss and duplication (a duplicate is a late second copy of the call at the leader). A client that gives
// up on an attempt cancels it (the cancel reaches the servers after a client delay), which takes a waiter
// out of its queue. What the services answer is judged as it is answered (lock-calls.ts). Checked here:
// forward-once — no call travels more than one forwarding hop (a call bounced between two nodes that each
// believe the other leads would never end).
import type { AcquireResult, LockCommand, LockResult, LockView } from '../../src/lock/index.js';
import type { LockMachine } from '../../src/lock/machine.js';
import type { Scheduler } from '../../src/raft/env.js';
import { silentNodeLogger } from '../../src/raft/logger.js';
import { routeNotLeader } from '../../src/server/client-api/forward-once.js';
import type { AdmissionLimits } from '../../src/lock/leader/index.js';
import {
  AdmissionLimitError,
  LeaderUnavailableError,
  LockService,
  RequestRejectedError,
  type LockNode,
} from '../../src/lock-on-raft/lock-service.js';
import type { Attempt } from './clients.js';
import type { SimCluster } from './cluster.js';
import { LockCallChecks, type Arrival } from './lock-calls.js';
import type { LockLeaderClass } from './lock-module.js';
import type { SimNode } from './node.js';
import type { ServeOutcome } from './workload.js';

/** A call the leader refused RESOURCE_EXHAUSTED (admission.ts): nothing was proposed for it, so it is answered
 *  without an entry, as a result of its own kind (no lock result: the log decided nothing). */
export interface ExhaustedAnswer {
  type: 'exhausted';
  limit: keyof AdmissionLimits;
  message: string;
}

/** A client call as the service takes it. */
export type LockCall =
  | {
      op: 'acquire';
      key: string;
      owner: string;
      ttlMs: number;
      requestId: string;
      waitMs: number;
      lockDelayMs: number;
      sessionId: number;
      limit?: number;
      shared?: boolean;
    }
  | { op: 'openSession'; owner: string; ttlMs: number; requestId: string; lockDelayMs: number }
  | { op: 'renewSession' | 'closeSession'; sessionId: number; owner: string; requestId: string }
  | { op: 'renew'; key: string; owner: string; token: bigint; ttlMs: number; requestId: string }
  | { op: 'release'; key: string; owner: string; token: bigint; requestId: string }
  | { op: 'revoke'; key: string; token: bigint; owner: string; requestId: string }
  | { op: 'get'; key: string };

export function callOf(cmd: LockCommand, waitMs: number): LockCall {
  switch (cmd.type) {
    case 'acquire':
      return {
        op: 'acquire',
        key: cmd.key,
        owner: cmd.owner,
        ttlMs: cmd.ttlMs,
        requestId: cmd.requestId,
        waitMs,
        lockDelayMs: cmd.lockDelayMs ?? 0,
        sessionId: cmd.sessionId ?? 0,
        ...(cmd.limit !== undefined ? { limit: cmd.limit } : {}),
        ...(cmd.shared === true ? { shared: true } : {}),
      };
    case 'openSession':
      return { op: 'openSession', owner: cmd.owner, ttlMs: cmd.ttlMs, requestId: cmd.requestId, lockDelayMs: cmd.lockDelayMs };
    case 'renewSession':
    case 'closeSession':
      return { op: cmd.type, sessionId: cmd.sessionId, owner: cmd.owner, requestId: '' };
    case 'renew':
      return { op: 'renew', key: cmd.key, owner: cmd.owner, token: cmd.token, ttlMs: cmd.ttlMs, requestId: cmd.requestId };
    case 'release':
      return { op: 'release', key: cmd.key, owner: cmd.owner, token: cmd.token, requestId: cmd.requestId };
    case 'revoke':
      return { op: 'revoke', key: cmd.key, token: cmd.token, owner: cmd.owner ?? '', requestId: cmd.requestId ?? '' };
    default:
      throw new Error(`clients do not send ${cmd.type}`);
  }
}

export interface LockServerOptions {
  housekeepingMs: number;
  checkpointIdleMs: number;
  /** Timeout of the leader's own proposals (expire, checkpoint, grants to waiters). */
  leaderProposalTimeoutMs: number;
  dedupWindowMs: number;
  /** The version gate's knowledge on `node` (LockServiceOptions.membersReadLevel). */
  membersReadLevel?: (node: SimNode) => number | undefined;
  /** The members `node` (leading) knows have run (LockServiceOptions.membersRan). */
  membersRan?: (node: SimNode) => readonly string[];
  /** The lock leader every service runs (the module's: a scratch copy's may carry a planted bug). */
  leader: LockLeaderClass;
  /** Admission limits of every node's leader (null: none). */
  limits: Readonly<AdmissionLimits> | null;
  /** Told of every entry a service appends to its node's log, as it appends it (while the leader's state is
   *  still the one it judged the proposal on). */
  proposed?: (node: SimNode, index: number, term: number, data: Uint8Array) => void;
  /** How long after its `soon` a service's turnEnd comes (lock-clock.ts `turnMs`): a pass of a busy event
   *  loop, in which the renews that arrived meanwhile are collected for one entry. */
  turnDelayMs: () => number;
}

interface Running {
  service: LockService;
  inc: number;
}

export class SimLockServers {
  private readonly running: (Running | null)[];
  /** AbortControllers of the calls an attempt opened (its first hop and any forwarded copies). */
  private readonly aborts = new Map<number, AbortController[]>();
  readonly checks: LockCallChecks;
  /** answeredAlreadyForwarded: forwarded calls that met a node not leading and were answered, not sent on
   *  (the case the forward-once check is about: it must occur for the check to mean anything). */
  readonly stats = {
    calls: 0,
    forwarded: 0,
    forwardsLost: 0,
    forwardDuplicates: 0,
    lateDuplicates: 0,
    answersLost: 0,
    cancels: 0,
    unavailable: 0,
    answeredAlreadyForwarded: 0,
    exhausted: 0,
  };
  /** Calls refused RESOURCE_EXHAUSTED, by the limit the refusal names. */
  readonly exhaustedBy: Record<keyof AdmissionLimits, number> = {
    maxWaitersPerKey: 0,
    maxWaiters: 0,
    maxHeldPerOwner: 0,
    maxHeld: 0,
    maxKeys: 0,
    maxSessions: 0,
    maxHoldsPerSession: 0,
  };
  violation: string | null = null;

  constructor(
    private readonly sim: SimCluster,
    private readonly opts: LockServerOptions,
    private readonly machineOf: (node: SimNode) => { readonly machine: unknown },
  ) {
    this.running = sim.nodes.map(() => null);
    this.checks = new LockCallChecks(opts.dedupWindowMs);
  }

  service(node: SimNode): LockService | null {
    const r = this.running[node.idx];
    return r !== null && r !== undefined && r.inc === node.incarnation && node.up ? r.service : null;
  }

  nodeStarted(node: SimNode): void {
    const sim = this.sim;
    const proposed = this.opts.proposed;
    const raftNode = node.rn as unknown as LockNode;
    const Leader = this.opts.leader;
    const service = new LockService(
      proposed ? watchProposals(raftNode, (index, term, data) => proposed(node, index, term, data)) : raftNode,
      this.machineOf(node) as { readonly machine: LockMachine },
      {
        env: { nowMs: () => sim.nodeNow(node), scheduler: this.schedulerOf(node), rng: node.coreRng },
        createLeader: (state, config) => new Leader(state, config),
        ...(this.opts.limits !== null ? { limits: this.opts.limits } : {}),
        housekeepingMs: this.opts.housekeepingMs,
        checkpointIdleMs: this.opts.checkpointIdleMs,
        proposalTimeoutMs: this.opts.leaderProposalTimeoutMs,
        logger: silentNodeLogger,
        ...(this.opts.membersReadLevel ? { membersReadLevel: () => this.opts.membersReadLevel!(node) } : {}),
        ...(this.opts.membersRan ? { membersRan: () => this.opts.membersRan!(node) } : {}),
      },
    );
    this.running[node.idx] = { service, inc: node.incarnation };
  }

  /** The node's virtual-time scheduler, whose `soon` (the service's only use of it: the end of a turn) comes
   *  as a busy event loop's would: after what arrives within the turn. */
  private schedulerOf(node: SimNode): Scheduler {
    const io = node.io!;
    return {
      soon: (fn) => void io.after(this.opts.turnDelayMs(), fn),
      after: (delayMs, fn) => io.after(delayMs, fn),
      every: (intervalMs, fn) => io.every(intervalMs, fn),
    };
  }

  nodeCrashed(node: SimNode): void {
    // A crash answers nothing: the service object is simply gone with its process.
    this.running[node.idx] = null;
    this.checks.closeScope(this.scope(node, node.incarnation - 1));
  }

  /** A client attempt reached `node`: serve it there, forwarding once to the leader if needed. */
  serve(node: SimNode, attempt: Attempt, call: LockCall, timeoutMs: number, reply: (o: ServeOutcome) => void): void {
    let answered = false;
    const once = (o: ServeOutcome) => {
      if (answered) return;
      answered = true;
      reply(o);
    };
    if (call.op === 'acquire') this.checks.invoked(LockCallChecks.requestKey(call.owner, call.requestId), attempt.op.invokedAt);
    this.callAt(node, attempt, call, timeoutMs, 0, once);
    // A late duplicate of the call (a proxy or transport replaying it): it reaches the node up to a second
    // later, maybe after the client has its answer and moved on; whatever it is answered goes nowhere.
    if (call.op !== 'get' && this.sim.duplicate > 0 && this.sim.netRng.chance(this.sim.duplicate)) {
      this.stats.lateDuplicates++;
      this.sim.later(this.sim.netDelay() + this.sim.netRng.float() * 1000, () => this.callAt(node, attempt, call, timeoutMs, 0, () => {}));
    }
  }

  /** The client gave up on `attempt`: its cancels reach the servers after a client-side delay. */
  cancel(attempt: Attempt): void {
    const list = this.aborts.get(attempt.id);
    if (list === undefined) return;
    this.aborts.delete(attempt.id);
    this.stats.cancels++;
    this.sim.later(0.05 + this.sim.clients.rng.float() * this.sim.profile.clientDelayMaxMs, () => {
      this.sim.trace.add(this.sim.now, '', 'cancel', `attempt${attempt.id} (${list.length} call(s))`);
      for (const ac of list) ac.abort();
    });
  }

  private scope(node: SimNode, inc: number): string {
    return `${node.idx}/${inc}`;
  }

  /** `hops`: forwarding hops the call took to get here (0: straight from the client). */
  private callAt(node: SimNode, attempt: Attempt, call: LockCall, timeoutMs: number, hops: number, reply: (o: ServeOutcome) => void): void {
    const sim = this.sim;
    const service = this.service(node);
    if (service === null) return; // down: the caller's deadline runs out
    this.stats.calls++;
    const inc = node.incarnation;
    const alive = () => node.up && node.incarnation === inc;
    const ac = new AbortController();
    let list = this.aborts.get(attempt.id);
    if (list === undefined) this.aborts.set(attempt.id, (list = []));
    list.push(ac);
    const label = `client${attempt.client.id} op${attempt.op.id} attempt${attempt.id}${hops > 0 ? ` (forwarded${hops > 1 ? ` ${hops} times` : ''})` : ''} at ${node.id}`;
    let arrival: Arrival | null = null;
    if (call.op === 'acquire' && node.rn?.isLeader()) {
      const joins = service.isQueued(call.key, call.owner, call.requestId);
      const replay = service.replaysOutcome(call.key, call.owner, call.requestId);
      const inAppliedLine = call.requestId !== '' && service.machine.waiterFor(call.owner, call.requestId)?.key === call.key;
      arrival = this.checks.arrive(
        this.scope(node, inc),
        call.key,
        LockCallChecks.requestKey(call.owner, call.requestId),
        call.waitMs,
        sim.nodeNow(node),
        node.raft.status().term,
        label,
        joins,
        replay,
        inAppliedLine,
      );
    }
    sim.trace.add(
      sim.now,
      node.id,
      `call ${call.op}`,
      `${label}${'key' in call ? ('requestId' in call ? ` ${call.key} ${call.owner}/${call.requestId}` : ` ${call.key}`) : ` ${call.owner}${'sessionId' in call ? ` session ${call.sessionId}` : ''}`}${call.op === 'acquire' ? ` wait=${call.waitMs}` : ''}${arrival !== null ? ` arrival#${arrival.seq}` : ''}`,
    );
    let p: Promise<LockResult | LockView>;
    switch (call.op) {
      case 'acquire':
        p = service.acquire(
          {
            key: call.key,
            owner: call.owner,
            ttlMs: call.ttlMs,
            waitMs: call.waitMs,
            requestId: call.requestId,
            lockDelayMs: call.lockDelayMs,
            sessionId: call.sessionId,
            limit: call.limit,
            shared: call.shared,
          },
          timeoutMs,
          ac.signal,
        );
        break;
      case 'openSession':
        p = service.openSession(
          { owner: call.owner, ttlMs: call.ttlMs, requestId: call.requestId, lockDelayMs: call.lockDelayMs },
          timeoutMs,
        );
        break;
      case 'renewSession':
        p = service.renewSession({ sessionId: call.sessionId, owner: call.owner, requestId: call.requestId }, timeoutMs);
        break;
      case 'closeSession':
        p = service.closeSession({ sessionId: call.sessionId, owner: call.owner, requestId: call.requestId }, timeoutMs);
        break;
      case 'renew':
        p = service.renew({ key: call.key, owner: call.owner, token: call.token, ttlMs: call.ttlMs, requestId: call.requestId }, timeoutMs);
        break;
      case 'release':
        p = service.release({ key: call.key, owner: call.owner, token: call.token, requestId: call.requestId }, timeoutMs);
        break;
      case 'revoke':
        p = service.revoke(
          { key: call.key, token: call.token, reason: 'lock simulation operator', requestId: call.requestId, owner: call.owner },
          timeoutMs,
        );
        break;
      case 'get':
        p = service.get(call.key, timeoutMs);
        break;
    }
    if (arrival !== null) {
      const a = arrival;
      ac.signal.addEventListener('abort', () => this.checks.close(a), { once: true });
    }
    p.then(
      sim.guard((answer: LockResult | LockView) => {
        if (!alive()) return;
        sim.trace.add(sim.now, node.id, `answer ${call.op}`, label, answer);
        if (arrival !== null) {
          const logMs = (this.machineOf(node).machine as { logNowMs: number }).logNowMs;
          const machine = this.machineOf(node).machine as { waiterFor?(owner: string, requestId: string): { ticket: number } | undefined };
          const placeOf = (rk: string): number | undefined => {
            const at = rk.indexOf('\u0000');
            return machine.waiterFor?.(rk.slice(0, at), rk.slice(at + 1))?.ticket;
          };
          this.checks.answered(
            this.scope(node, inc),
            arrival,
            answer as AcquireResult,
            sim.nodeNow(node),
            logMs,
            `${node.idx}/${arrival.term}`,
            placeOf,
          );
        }
        const index = 'type' in answer ? answer.index : 0;
        reply({ outcome: 'ok', result: answer, index });
      }),
      sim.guard((err: unknown) => {
        if (arrival !== null) this.checks.close(arrival);
        if (!alive()) return;
        sim.trace.add(sim.now, node.id, `fail ${call.op}`, `${label}: ${(err as Error)?.message ?? String(err)}`);
        if (err instanceof LeaderUnavailableError) {
          this.stats.unavailable++;
          const leader = err.leaderId === null ? -1 : sim.indexOf(err.leaderId);
          const route = routeNotLeader(node.id, err.leaderId, hops > 0);
          if (route.action === 'forward' && sim.indexOf(route.to) >= 0) {
            this.forward(node, sim.nodes[sim.indexOf(route.to)]!, attempt, call, timeoutMs, hops, label, (o) => {
              if (alive()) reply(o);
            });
          } else {
            if (route.action === 'answer' && route.why === 'already-forwarded') this.stats.answeredAlreadyForwarded++;
            reply({ outcome: leader >= 0 ? 'redirect' : 'failed', hint: leader });
          }
          return;
        }
        if (err instanceof AdmissionLimitError) {
          // RESOURCE_EXHAUSTED: the leader's admission refused it before proposing anything. The client is told
          // so and moves on (a retry would meet the same limit until something is released).
          const limit = /^limit limits\.(\w+) /.exec(err.message)?.[1] as keyof AdmissionLimits | undefined;
          if (limit === undefined || !(limit in this.exhaustedBy))
            return this.fail(`${label}: RESOURCE_EXHAUSTED names no limit: ${err.message}`);
          this.stats.exhausted++;
          this.exhaustedBy[limit]++;
          const answer: ExhaustedAnswer = { type: 'exhausted', limit, message: err.message };
          reply({ outcome: 'ok', index: 0, result: answer });
          return;
        }
        if (err instanceof RequestRejectedError && call.op === 'acquire' && call.sessionId > 0 && /is not open/.test(err.message)) {
          // Its session ran out (by log time) before the acquire was ordered: refused by the log (the oracle
          // judges that entry). The client's retries meet the same answer until it gives up.
          reply({ outcome: 'failed', hint: -1 });
          return;
        }
        if (err instanceof RequestRejectedError && call.op === 'acquire' && /^limit\/shared: .*cluster level/.test(err.message)) {
          // A semaphore or shared hold asked of a leader whose log is not at level 3 yet: retried until it is.
          reply({ outcome: 'failed', hint: -1 });
          return;
        }
        const mismatch =
          err instanceof RequestRejectedError && call.op === 'acquire' ? /^(limit|shared): key|^shared: owner/.exec(err.message) : null;
        if (mismatch !== null) {
          // The log refused it as a whole (LIMIT_MISMATCH / HOLD_MODE_MISMATCH; the oracle judged the entry): the
          // client is told so, as gRPC's FAILED_PRECONDITION would, and does not retry it.
          reply({
            outcome: 'ok',
            index: 0,
            result: {
              type: 'error',
              index: 0,
              code: mismatch[1] === 'limit' ? 'LIMIT_MISMATCH' : 'HOLD_MODE_MISMATCH',
              message: (err as Error).message,
            },
          });
          return;
        }
        if (
          err instanceof RequestRejectedError &&
          call.op === 'acquire' &&
          /^request_id .* (was first used for|waits in line for key) /.test(err.message)
        ) {
          // REQUEST_ID_REUSED (a client's deliberate reuse of a refused request's id with other terms, level 6;
          // the oracle judged the entry): told so, as FAILED_PRECONDITION, and not retried.
          reply({ outcome: 'ok', index: 0, result: { type: 'error', index: 0, code: 'REQUEST_ID_REUSED', message: err.message } });
          return;
        }
        if (err instanceof RequestRejectedError) this.fail(`${label}: the service rejected a ${call.op} as a whole: ${err.message}`);
        else this.fail(`${label}: the service failed a ${call.op} with ${(err as Error)?.stack ?? String(err)}`);
      }),
    );
  }

  /** The follower's one forwarding hop to the leader, and the answer's way back. `hops`: the hops the call
   *  took to reach `from`, which must be none (forward-once). */
  private forward(
    from: SimNode,
    to: SimNode,
    attempt: Attempt,
    call: LockCall,
    timeoutMs: number,
    hops: number,
    label: string,
    reply: (o: ServeOutcome) => void,
  ): void {
    if (hops > 0)
      this.fail(
        `forward-once: ${label} arrived forwarded and was forwarded again, to ${to.id} (a forwarded call must be answered, never forwarded on: two nodes that each believe the other leads would bounce it)`,
      );
    this.stats.forwarded++;
    const back = (o: ServeOutcome) => this.hop(to, from, 'answer', () => reply(o));
    const delivered = this.hop(from, to, 'call', () => this.callAt(to, attempt, call, timeoutMs, hops + 1, back));
    if (delivered && this.sim.duplicate > 0 && this.sim.netRng.chance(this.sim.duplicate)) {
      // A late second copy of the same call at the leader (same request_id): its answer goes nowhere.
      this.stats.forwardDuplicates++;
      this.sim.later(this.sim.netDelay() + this.sim.netDelay(), () => this.callAt(to, attempt, call, timeoutMs, hops + 1, () => {}));
    }
  }

  /** One simulated message between two nodes' servers: cut links and loss drop it. */
  private hop(from: SimNode, to: SimNode, what: string, deliver: () => void): boolean {
    const sim = this.sim;
    const n = sim.nodes.length;
    if (sim.blocked[from.idx * n + to.idx] || sim.netRng.chance(sim.loss)) {
      if (what === 'call') this.stats.forwardsLost++;
      else this.stats.answersLost++;
      sim.trace.add(sim.now, from.id, `lost forwarded ${what}`, `to ${to.id}`);
      return false;
    }
    sim.later(sim.netDelay(), () => {
      if (sim.blocked[from.idx * n + to.idx]) return;
      deliver();
    });
    return true;
  }

  private fail(message: string): void {
    if (this.violation === null) this.violation = message;
  }
}

/** `node` as the lock service sees it, with every entry it appends reported to `seen` (index, term, bytes)
 *  the moment the Raft node appends it: the log position a proposal took is known only there. */
function watchProposals(node: LockNode, seen: (index: number, term: number, data: Uint8Array) => void): LockNode {
  return new Proxy(node, {
    get(target, prop) {
      if (prop === 'propose') {
        return (data: Uint8Array, timeoutMs: number) => {
          const before = target.status().lastIndex;
          const appended = target.propose(data, timeoutMs);
          const after = target.status();
          if (after.lastIndex === before + 1) seen(after.lastIndex, after.term, data);
          return appended;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
