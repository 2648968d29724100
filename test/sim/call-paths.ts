// A seeded simulation of the server's call handling — the code grpc-server.ts wraps, run here without gRPC:
// Lock/Stream multiplexing (transport/call-mux.ts, lock-stream.ts serveStreamMessage), a follower forwarding
// over its Forward stream (transport/forward-calls.ts on the follower, call-mux.ts on the leader), the
// caller's deadline carried across the hop, owner binding (lock-calls.ts), and behind them the real lock
// service, lock leader and lock machine. Two nodes: a leader L whose "log" applies every proposal after a
// random delay, and a follower F that knows L leads. Every connection — each client's Lock/Stream to a node,
// and F's Forward stream to L — delays its messages and can reset; calls are duplicated as late second
// copies (same request_id, a call of their own). Every message crosses a connection as its bytes, encoded
// and decoded with the node's own codecs (wire/call-envelope-*.ts, lock-stream-codec.ts, call-bodies.ts):
// F passes a client's request bytes to L and L's response bytes back as they came. The responses inside
// are the simulation's own (JSON of a tagged result), which the envelopes carry like any bytes. Virtual
// time, one seed decides everything.
//
// Invariants, checked as the run goes:
// - each call is answered at most once, and with the answer of its own request (every result the service
//   gives is tagged at the leader with the request it answered);
// - a forwarded call never outlives its caller's deadline at the leader by more than the proposal timeout;
// - a waiter's place survives a reset under a session: the leader never gives up the place of a session
//   waiter whose client did not cancel it and whose deadlines have not passed.
import { status } from '@grpc/grpc-js';
import { decodeCommand, type LockCommand } from '../../src/lock/commands.js';
import { LockMachine } from '../../src/lock/machine.js';
import type { LockResult } from '../../src/lock/types.js';
import type { Entry, SoftState, Status } from '../../src/raft/core/types.js';
import type { Scheduler, TimerHandle } from '../../src/raft/env.js';
import { NotLeaderError } from '../../src/raft/errors.js';
import { silentNodeLogger } from '../../src/raft/logger.js';
import { handleForwarded } from '../../src/server/client-api/forwarded-call.js';
import { serveStreamMessage } from '../../src/server/client-api/lock-stream.js';
import { LockCallHandling, type AnswerEncoder } from '../../src/server/client-api/lock-calls.js';
import { LockService, type LockNode } from '../../src/lock-on-raft/lock-service.js';
import { CallMux } from '../../src/transport/call-mux.js';
import { serveForwardMessage, type ForwardedCallHandler } from '../../src/transport/forward-server.js';
import type { PeerCertificate } from 'node:tls';
import { ForwardCalls, type ForwardMessage } from '../../src/transport/forward-calls.js';
import { DEFAULT_LOCK_LIMITS } from '../../src/lock/validate.js';
import { decodeAnswerEnvelope, decodeCallEnvelope } from '../../src/wire/call-envelope-decode.js';
import { encodeAnswerEnvelope, encodeCallEnvelope } from '../../src/wire/call-envelope-encode.js';
import { decodeRequestBody, encodeRequestBody } from '../../src/server/client-api/call-bodies.js';
import { decodeLockCall } from '../../src/server/client-api/lock-stream-codec.js';
import type { LockCallName } from '../../src/wire/lock.js';
import { SimRng } from './rng.js';

export interface CallPathsProfile {
  clients: number;
  keys: number;
  /** Virtual ms the workload runs; then every client stops and the run drains. */
  durationMs: number;
  /** Mean ms between connection resets (any client stream or the Forward stream). */
  resetMeanMs: number;
  /** Chance a call is sent again later as a second copy. */
  duplicate: number;
  /** Chance an attempt gives up before its wait (a short caller deadline). */
  giveUp: number;
  /** Chance a client acquires under its session (else with a lease). */
  session: number;
  /** One-way message delay range (ms). */
  delayMs: [number, number];
  proposalTimeoutMs: number;
  graceMs: number;
  /** A grant is held up to this long (ms): long enough for lines to form, so a waiter outlives a reset. */
  holdMaxMs: number;
}

export const CALL_PATHS_PROFILE: CallPathsProfile = {
  clients: 8,
  keys: 2,
  durationMs: 20_000,
  resetMeanMs: 150,
  duplicate: 0.05,
  giveUp: 0.2,
  session: 0.7,
  delayMs: [0.2, 6],
  proposalTimeoutMs: 500,
  graceMs: 300,
  holdMaxMs: 300,
};

export interface CallPathsReport {
  violations: string[];
  stats: Record<string, number>;
}

/** Bytes as they cross a simulated connection: a copy in an ArrayBuffer of their own, so what the other
 *  side reads (views into it included) is known by that buffer (the caller-deadline check keys on it). */
function onTheWire(bytes: Uint8Array): Buffer {
  return Buffer.from(new Uint8Array(bytes).buffer);
}

/** The simulation's response bytes: its tagged result as JSON (tokens are bigints). */
function taggedBytes(_name: LockCallName, t: Tagged): Uint8Array {
  return Buffer.from(JSON.stringify(t, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
}

function taggedOf(body: Uint8Array | undefined): Tagged | null {
  return body === undefined ? null : (JSON.parse(Buffer.from(body).toString()) as Tagged);
}

// ---------------------------------------------------------------- virtual time

class Clock implements Scheduler {
  nowMs = 0;
  private seq = 0;
  private readonly queue: { at: number; seq: number; fn: () => void; live: boolean }[] = [];

  soon(fn: () => void): void {
    this.after(0, fn);
  }
  after(delayMs: number, fn: () => void): TimerHandle {
    const ev = { at: this.nowMs + Math.max(0, delayMs), seq: this.seq++, fn, live: true };
    // Sorted insert (the queue stays short): by time, then by insertion.
    let i = this.queue.length;
    while (i > 0 && (this.queue[i - 1]!.at > ev.at || (this.queue[i - 1]!.at === ev.at && this.queue[i - 1]!.seq > ev.seq))) i--;
    this.queue.splice(i, 0, ev);
    return { cancel: () => (ev.live = false) };
  }
  every(intervalMs: number, fn: () => void): TimerHandle {
    let handle: TimerHandle;
    let stopped = false;
    const tick = () => {
      if (stopped) return;
      fn();
      handle = this.after(intervalMs, tick);
    };
    handle = this.after(intervalMs, tick);
    return {
      cancel: () => {
        stopped = true;
        handle.cancel();
      },
    };
  }
  /** Runs events until `untilMs`; promise callbacks run between events (awaited microtasks). */
  async run(untilMs: number): Promise<void> {
    while (this.queue.length > 0 && this.queue[0]!.at <= untilMs) {
      const ev = this.queue.shift()!;
      this.nowMs = ev.at;
      if (ev.live) ev.fn();
      await drainMicrotasks();
    }
    this.nowMs = untilMs;
  }
}

async function drainMicrotasks(): Promise<void> {
  for (let i = 0; i < 4; i++) await Promise.resolve();
}

// ---------------------------------------------------------------- the two nodes' "Raft"

type Listener = (...args: never[]) => void;

/** L: a leader whose log applies each proposal after a delay; F: a follower that names L. Both see the same
 *  applied machine (F's replica is L's, for the follower's routing only). */
class FakeNode implements LockNode {
  term = 1;
  private readonly listeners = new Map<string, Listener[]>();
  constructor(
    readonly id: string,
    private readonly leads: boolean,
    private readonly clock: Clock,
    private readonly log: FakeLog,
  ) {}
  get leaderId(): string {
    return 'L';
  }
  isLeader(): boolean {
    return this.leads;
  }
  status(): Status {
    return { role: this.leads ? 'leader' : 'follower', term: this.term, leaderId: 'L' } as Status;
  }
  progress(): Map<string, never> {
    return new Map<string, never>();
  }
  propose(data: Uint8Array, timeoutMs: number): Promise<{ index: number; result: LockResult | null }> {
    if (!this.leads) return Promise.reject(new NotLeaderError('L'));
    return this.log.append(data, timeoutMs);
  }
  readBarrier(): Promise<number> {
    if (!this.leads) return Promise.reject(new NotLeaderError('L'));
    return new Promise((resolve) => this.clock.after(this.log.delay(), () => resolve(this.log.machine.appliedIndex)));
  }
  on(event: string, listener: Listener): this {
    const list = this.listeners.get(event) ?? [];
    list.push(listener);
    this.listeners.set(event, list);
    return this;
  }
  emit(event: string, ...args: unknown[]): void {
    for (const l of this.listeners.get(event) ?? []) (l as (...a: unknown[]) => void)(...args);
  }
}

class FakeLog {
  readonly machine = new LockMachine();
  nodes: FakeNode[] = [];
  /** Told of every entry as it applies (the invariants read the proposals). */
  onApply: (command: Uint8Array, index: number) => void = () => {};
  private last = Promise.resolve();
  constructor(
    private readonly clock: Clock,
    private readonly rng: SimRng,
  ) {}
  delay(): number {
    return 0.5 + this.rng.float() * 4;
  }
  append(data: Uint8Array, timeoutMs: number): Promise<{ index: number; result: LockResult | null }> {
    return new Promise((resolve, reject) => {
      let done = false;
      const timer = this.clock.after(timeoutMs, () => {
        done = true;
        reject(new Error('proposal timed out'));
      });
      // Entries apply in the order they were appended.
      this.last = this.last.then(
        () =>
          new Promise<void>((next) =>
            this.clock.after(this.delay(), () => {
              this.onApply(data, this.machine.appliedIndex + 1);
              const index = this.machine.appliedIndex + 1;
              const result = this.machine.apply(index, 1, data);
              const entry = { index, term: 1, kind: 'normal', data } as unknown as Entry;
              for (const n of this.nodes) n.emit('applied', entry, result);
              timer.cancel();
              if (!done) resolve({ index, result });
              next();
            }),
          ),
      );
    });
  }
}

// ---------------------------------------------------------------- the simulation

/** What the leader's service answered, tagged with the request it answered. */
interface Tagged {
  result: unknown;
  forRequest: string;
}

/** A request's identity: what it is, so an answer can be matched to it. */
function requestIdentity(method: string, request: Record<string, unknown>): string {
  return `${method}:${String(request.owner ?? '')}:${String(request.request_id ?? '')}:${String(request.key ?? request.session_id ?? '')}`;
}

interface ClientCall {
  identity: string;
  /** The wire name of its request and response ('acquire', 'release'). */
  name: string;
  deadlineMs: number;
  settle(reply: { code: number; details: string; response: Tagged | null }): void;
}

/** A client's Lock/Stream to one node: the client's pending calls, the node's CallMux. */
class SimStream {
  readonly pending = new Map<string, ClientCall>();
  readonly settled = new Set<string>();
  private nextId = 1;
  readonly mux: CallMux<Uint8Array>;
  open = true;
  constructor(
    private readonly sim: CallPathsSim,
    readonly node: 'L' | 'F',
    readonly cn: string,
  ) {
    this.mux = new CallMux<Uint8Array>((answer) => {
      const bytes = onTheWire(answer);
      this.sim.later(() => this.deliver(bytes));
    }, 10_000);
  }
  send(method: 'Acquire' | 'Release', request: Record<string, unknown>, timeoutMs: number, call: ClientCall): string {
    const id = String(this.nextId++);
    this.pending.set(id, call);
    const name = method === 'Acquire' ? 'acquire' : 'release';
    const body = encodeRequestBody(name, request);
    const frame = onTheWire(encodeCallEnvelope({ callId: id, timeoutMs: Math.max(1, Math.floor(timeoutMs)), name, body }, 'lock'));
    this.sim.noteCallerDeadline(frame, call.deadlineMs);
    this.sim.later(() => this.receive(frame));
    return id;
  }
  cancel(id: string): void {
    this.pending.delete(id);
    const frame = onTheWire(encodeCallEnvelope({ callId: id, cancel: true }, 'lock'));
    this.sim.later(() => this.receive(frame));
  }
  /** The node reads one LockCall's bytes off the stream, as the server's Lock/Stream codec does. */
  private receive(frame: Buffer): void {
    if (!this.open) return;
    const wire = decodeLockCall(frame);
    if ('__invalid' in wire) return this.sim.violation(`a LockCall the simulation encoded was refused: ${wire.__invalid}`);
    serveStreamMessage(this.sim.handlingOf(this.node), this.mux, wire, {
      certificateCn: this.cn,
      remote: this.cn,
      nowMs: this.sim.clock.nowMs,
    });
  }
  private deliver(bytes: Buffer): void {
    if (!this.open) return;
    const answer = decodeAnswerEnvelope(bytes, 'lock');
    const callId = answer.callId;
    const call = this.pending.get(callId);
    if (call === undefined) {
      if (this.settled.has(callId)) this.sim.violation(`call ${this.cn}#${callId} on ${this.node} was answered twice`);
      return;
    }
    this.pending.delete(callId);
    this.settled.add(callId);
    if (answer.code === status.OK && answer.name !== call.name)
      this.sim.violation(
        `call ${this.cn}#${callId} on ${this.node} (${call.identity}) was answered with a ${answer.name ?? 'missing'} response`,
      );
    const response = answer.code === status.OK ? taggedOf(answer.body) : null;
    if (response !== null && response.forRequest !== call.identity)
      this.sim.violation(
        `call ${this.cn}#${callId} on ${this.node} (${call.identity}) was answered with the answer of ${response.forRequest}`,
      );
    call.settle({ code: answer.code, details: answer.details, response });
  }
  /** The connection resets: the node sees the stream go away, the client fails what is pending. */
  reset(): void {
    if (!this.open) return;
    this.open = false;
    this.mux.close();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.settle({ code: status.UNAVAILABLE, details: 'the stream broke', response: null });
  }
}

export class CallPathsSim {
  readonly clock = new Clock();
  private readonly rng: SimRng;
  private readonly log: FakeLog;
  private readonly services = new Map<'L' | 'F', LockService>();
  private readonly handlings = new Map<'L' | 'F', LockCallHandling<Tagged>>();
  private forwardStreamOpen: { reset(): void } | null = null;
  private readonly streams = new Map<string, SimStream>();
  readonly violations: string[] = [];
  readonly stats: Record<string, number> = {
    calls: 0,
    forwardedCalls: 0,
    grants: 0,
    notAcquired: 0,
    resets: 0,
    forwardResets: 0,
    duplicates: 0,
    giveUps: 0,
  };
  /** Requests whose client cancelled them, or one of whose calls' deadline passed (their place may go). */
  private readonly ended = new Set<string>();
  /** The caller's deadline of every call sent, by the buffer its bytes crossed a connection in: the
   *  client's LockCall, then F's ForwardedCall carrying its request bytes (onTheWire). */
  private readonly callerDeadline = new WeakMap<ArrayBufferLike, number>();

  noteCallerDeadline(frame: Uint8Array, deadlineMs: number): void {
    this.callerDeadline.set(frame.buffer, deadlineMs);
  }

  constructor(
    readonly seed: number,
    readonly profile: CallPathsProfile = CALL_PATHS_PROFILE,
  ) {
    this.rng = new SimRng(seed);
    this.log = new FakeLog(this.clock, SimRng.derive(seed, 'log'));
    const env = { nowMs: () => Math.floor(this.clock.nowMs), scheduler: this.clock, rng: this.rng };
    for (const id of ['L', 'F'] as const) {
      const node = new FakeNode(id, id === 'L', this.clock, this.log);
      this.log.nodes.push(node);
      const service = new LockService(
        node,
        {
          get machine() {
            return logMachine();
          },
        },
        {
          env,
          housekeepingMs: 10,
          checkpointIdleMs: 1e9,
          proposalTimeoutMs: profile.proposalTimeoutMs,
          logger: silentNodeLogger,
        },
      );
      this.services.set(id, service);
    }
    const log = this.log;
    function logMachine(): LockMachine {
      return log.machine;
    }
    this.log.onApply = (data) => this.checkDequeue(data);
    for (const id of ['L', 'F'] as const) this.handlings.set(id, this.handling(id));
  }

  handlingOf(node: 'L' | 'F'): LockCallHandling<Tagged> {
    return this.handlings.get(node)!;
  }

  later(fn: () => void): void {
    const [lo, hi] = this.profile.delayMs;
    this.clock.after(lo + this.rng.float() * (hi - lo), fn);
  }

  violation(message: string): void {
    if (this.violations.length < 20) this.violations.push(`t=${this.clock.nowMs.toFixed(1)} ${message}`);
  }

  private handling(id: 'L' | 'F'): LockCallHandling<Tagged> {
    const service = this.services.get(id)!;
    // The leader's service tags each result with the request it answers.
    const tag =
      (method: string) =>
      (result: unknown): Tagged => ({ result, forRequest: (result as { __for?: string }).__for ?? method });
    const encode = Object.fromEntries(
      ['Acquire', 'Renew', 'Release', 'Get', 'OpenSession', 'RenewSession', 'CloseSession', 'Revoke'].map((m) => [m, tag(m)]),
    ) as unknown as AnswerEncoder<Tagged>;
    const tagged = new Proxy(service, {
      get: (target, prop) => {
        if (prop === 'acquire' || prop === 'release') {
          return async (req: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal) => {
            const r = (await (target[prop] as (...a: unknown[]) => Promise<object>).call(target, req, timeoutMs, signal)) as object;
            const method = prop === 'acquire' ? 'Acquire' : 'Release';
            const identity = `${method}:${String(req.owner)}:${String(req.requestId)}:${String(req.key)}`;
            return { ...r, __for: identity };
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    return new LockCallHandling<Tagged>({
      service: tagged,
      limits: DEFAULT_LOCK_LIMITS,
      defaultTimeoutMs: 1000,
      encode,
      bodies: { request: encodeRequestBody, response: taggedBytes },
      logger: silentNodeLogger,
      nowMs: () => this.clock.nowMs,
      after: (ms, fn) => void this.clock.after(ms, fn),
      leaderAddress: () => 'L',
      forwardVia: id === 'F' ? () => this.forwardCalls() : () => null,
      ownerBinding: true,
      isMember: (cn) => cn === 'L' || cn === 'F',
      detachedWaiterGraceMs: this.profile.graceMs,
    });
  }

  // ---------------------------------------------------------------- F's Forward stream to L

  private forward: ForwardCalls | null = null;

  private forwardCalls(): ForwardCalls {
    if (this.forward !== null) return this.forward;
    this.forward = new ForwardCalls(
      (onAnswer, onBreak) => {
        let open = true;
        // The leader's side of this stream: forward-server.ts's CallMux and message handling, and the
        // client API's handling of a forwarded call (forwarded-call.ts handleForwarded), for member F.
        const mux = new CallMux<Uint8Array>((answer) => {
          const bytes = onTheWire(answer);
          this.later(() => {
            // As forward.ts reads a ForwardedAnswer: its envelope, the response left as bytes.
            if (open) onAnswer(decodeAnswerEnvelope(bytes, 'forward'));
          });
        });
        const link = {
          reset: () => {
            if (!open) return;
            open = false;
            mux.close();
            onBreak('the forward stream reset');
          },
        };
        this.forwardStreamOpen = link;
        const peer = { certificate: { subject: { CN: 'F' } } as unknown as PeerCertificate, remote: 'F' };
        const handler: ForwardedCallHandler = (wire, p, signal) => {
          this.stats.forwardedCalls++;
          const callerDeadlineMs = (wire.body && this.callerDeadline.get(wire.body.buffer)) ?? Infinity;
          return handleForwarded(this.handlingOf('L'), wire, p, signal, this.clock.nowMs).then((answer) => {
            const overMs = this.clock.nowMs - callerDeadlineMs;
            if (overMs > this.profile.proposalTimeoutMs) {
              const decoded = wire.name && wire.body ? decodeRequestBody(wire.name, wire.body) : null;
              const request = decoded !== null && 'request' in decoded ? decoded.request : {};
              this.violation(
                `a forwarded ${wire.name} (${requestIdentity(String(wire.name), request)}) ended at the leader ${overMs.toFixed(0)} ms after its caller's deadline (bound: the proposal timeout, ${this.profile.proposalTimeoutMs} ms)`,
              );
            }
            return answer;
          });
        };
        return {
          // As forward.ts writes a ForwardMessage on the wire, and the leader's Forward codec reads it.
          write: (m: ForwardMessage) => {
            const frame = onTheWire(encodeCallEnvelope({ ...m, from: 'F', clusterId: 'sim' }, 'forward'));
            const deadlineMs = m.body !== undefined ? this.callerDeadline.get(m.body.buffer) : undefined;
            if (deadlineMs !== undefined) this.callerDeadline.set(frame.buffer, deadlineMs);
            this.later(() => {
              if (open) serveForwardMessage(mux, decodeCallEnvelope(frame, 'forward'), handler, 'L', peer);
            });
          },
          abandon: () => {
            open = false;
            mux.close();
          },
        };
      },
      'L',
      { after: (ms, fn) => this.clock.after(ms, fn) },
    );
    return this.forward;
  }

  // ---------------------------------------------------------------- invariants on the log

  /** A dequeue the leader proposes for a session waiter must be one its client asked for. */
  private checkDequeue(data: Uint8Array): void {
    const command = decodeDequeue(data);
    if (command === null || command.cause !== 'cancel') return;
    const m = this.log.machine as unknown as {
      sessionOfWaiter(key: string, ticket: number): number | undefined;
    };
    const sessionId = m.sessionOfWaiter(command.key, command.ticket);
    if (sessionId === undefined || sessionId === 0) return;
    const who = this.waiterRequests.get(`${command.key}#${command.ticket}`);
    if (who === undefined || this.ended.has(who)) return;
    this.violation(
      `the place of session waiter ${who} (${command.key} ticket ${command.ticket}) was given up, and its client neither cancelled it nor let a deadline of its calls pass`,
    );
  }

  /** `${key}#${ticket}` -> request identity (filled from the machine when the request is first seen waiting). */
  private readonly waiterRequests = new Map<string, string>();

  private noteWaiter(owner: string, requestId: string, identity: string): void {
    const at = this.log.machine.waiterFor(owner, requestId);
    if (at !== undefined) this.waiterRequests.set(`${at.key}#${at.ticket}`, identity);
  }

  // ---------------------------------------------------------------- clients

  private stream(client: string, node: 'L' | 'F'): SimStream {
    const name = `${client}@${node}`;
    let s = this.streams.get(name);
    if (s === undefined || !s.open) this.streams.set(name, (s = new SimStream(this, node, client)));
    return s;
  }

  private async openSession(owner: string): Promise<number> {
    const r = await this.services.get('L')!.openSession({ owner, ttlMs: 600_000, requestId: `${owner}-session`, lockDelayMs: 0 }, 1000);
    return Number(r.sessionId);
  }

  /** One client: acquire (retrying the same request on failure), hold, release; again, until the end. */
  private async client(i: number): Promise<void> {
    const owner = `c${i}`;
    const sessionId = await this.openSession(owner);
    const keys = Array.from({ length: this.profile.keys }, (_, k) => `k${k}`);
    for (let op = 0; this.clock.nowMs < this.profile.durationMs; op++) {
      const key = this.rng.pick(keys);
      const underSession = this.rng.chance(this.profile.session);
      const waitMs = Math.floor(200 + this.rng.float() * 2800);
      const requestId = `${owner}-${op}`;
      const identity = `Acquire:${owner}:${requestId}:${key}`;
      const request: Record<string, unknown> = {
        key,
        owner,
        ttl_ms: underSession ? '0' : '2000',
        wait_ms: String(waitMs),
        request_id: requestId,
        session_id: underSession ? String(sessionId) : '0',
      };
      const opDeadline = this.clock.nowMs + waitMs + 1500;
      let granted: { token: string } | null = null;
      while (this.clock.nowMs < opDeadline && granted === null) {
        const reply = await this.attempt(owner, 'Acquire', request, identity, waitMs, opDeadline);
        if (reply === 'not-acquired') {
          this.stats.notAcquired++;
          break;
        }
        if (reply !== null) granted = reply;
        else await this.sleep(1 + this.rng.float() * 20);
      }
      if (granted === null) {
        this.ended.add(identity); // the client gave up on it
        continue;
      }
      this.stats.grants++;
      await this.sleep(this.rng.float() * this.profile.holdMaxMs);
      const release = { key, owner, token: granted.token, request_id: `${requestId}-rel` };
      for (let tries = 0; tries < 20; tries++) {
        const r = await this.attempt(owner, 'Release', release, `Release:${owner}:${requestId}-rel:${key}`, 0, this.clock.nowMs + 2000);
        if (r !== null) break;
        await this.sleep(1 + this.rng.float() * 20);
      }
    }
  }

  /** One attempt on a random node's stream: the grant, 'not-acquired', or null (retry). */
  private attempt(
    owner: string,
    method: 'Acquire' | 'Release',
    request: Record<string, unknown>,
    identity: string,
    waitMs: number,
    opDeadline: number,
  ): Promise<{ token: string } | 'not-acquired' | null> {
    const node = this.rng.chance(0.7) ? 'F' : 'L';
    const stream = this.stream(owner, node);
    const giveUp = method === 'Acquire' && this.rng.chance(this.profile.giveUp);
    const timeoutMs = Math.max(1, Math.min(opDeadline - this.clock.nowMs, giveUp ? 1 + this.rng.float() * waitMs * 0.3 : waitMs + 1000));
    // Each attempt sends its own call; its caller's deadline goes with its bytes (SimStream.send).
    const copy = { ...request, wait_ms: request.wait_ms };
    this.stats.calls++;
    return new Promise((resolve) => {
      let done = false;
      const finish = (v: { token: string } | 'not-acquired' | null) => {
        if (done) return;
        done = true;
        timer.cancel();
        resolve(v);
      };
      if (process.env.CALL_TRACE === identity)
        console.log(`TRACE t=${this.clock.nowMs.toFixed(1)} ${identity} sent via ${node} timeout ${timeoutMs.toFixed(0)} giveUp=${giveUp}`);
      const id = stream.send(method, copy, timeoutMs, {
        identity,
        name: method === 'Acquire' ? 'acquire' : 'release',
        deadlineMs: this.clock.nowMs + timeoutMs,
        settle: (reply) => {
          if (process.env.CALL_TRACE === identity)
            console.log(
              `TRACE t=${this.clock.nowMs.toFixed(1)} ${identity} via ${node} #${id} settled ${reply.code} ${reply.details} ${JSON.stringify(reply.response?.result ?? null, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`,
            );
          if (reply.code !== status.OK) {
            if (process.env.CALL_DEBUG) console.log(method, reply.code, reply.details);
            return finish(null);
          }
          const r = reply.response!.result as { acquired?: boolean; released?: boolean; token?: string };
          if (method === 'Release') return finish({ token: '' });
          finish(r.acquired ? { token: r.token! } : 'not-acquired');
        },
      });
      // At the attempt's deadline its caller has given up on it, however it ended: the leader may then give the
      // place up (a waiting call whose deadline passes ends as its caller's cancel).
      this.clock.after(timeoutMs, () => this.ended.add(identity));
      // The client's own deadline: it gives up on the attempt and says so (a cancel on its stream).
      const timer = this.clock.after(timeoutMs, () => {
        if (done) return;
        this.ended.add(identity); // its place may go now: the client cancelled it
        if (process.env.CALL_TRACE === identity)
          console.log(`TRACE t=${this.clock.nowMs.toFixed(1)} ${identity} #${id} client deadline: cancel`);
        this.stats.giveUps++;
        stream.cancel(id);
        finish(null);
      });
      if (method === 'Acquire') {
        // Once it has a place, remember whose place it is (the dequeue check reads it).
        this.clock.after(20, () => this.noteWaiter(owner, String(request.request_id), identity));
        if (this.rng.chance(this.profile.duplicate)) {
          // A late second copy of the call, a call of its own whose answer nobody reads.
          this.stats.duplicates++;
          this.clock.after(this.rng.float() * 300, () => {
            const dup = { ...request };
            this.clock.after(timeoutMs, () => this.ended.add(identity));
            this.stream(owner, this.rng.chance(0.5) ? 'F' : 'L').send(method, dup, timeoutMs, {
              identity,
              name: 'acquire',
              deadlineMs: this.clock.nowMs + timeoutMs,
              settle: () => {},
            });
          });
        }
      }
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.after(ms, resolve));
  }

  /** Connections reset at random: a client's stream (its calls end detached at the node) or F's link. */
  private resets(): void {
    const next = () =>
      this.clock.after(this.rng.exp(this.profile.resetMeanMs), () => {
        if (this.clock.nowMs > this.profile.durationMs) return;
        const open = [...this.streams.values()].filter((s) => s.open);
        if (this.rng.chance(0.25) && this.forwardStreamOpen !== null) {
          this.stats.forwardResets++;
          this.forwardStreamOpen.reset();
          this.forwardStreamOpen = null;
        } else if (open.length > 0) {
          const s = this.rng.pick(open);
          this.stats.resets++;
          s.reset();
        }
        next();
      });
    next();
  }

  async run(): Promise<CallPathsReport> {
    await this.clock.run(50); // L's term starts
    this.resets();
    const clients = Array.from({ length: this.profile.clients }, (_, i) => this.client(i));
    let finished = false;
    void Promise.all(clients).then(() => (finished = true));
    for (let t = 0; !finished && t < this.profile.durationMs + 20_000; t += 100) await this.clock.run(this.clock.nowMs + 100);
    if (!finished) this.violation('the clients did not finish');
    for (const s of this.services.values()) s.close();
    return { violations: this.violations, stats: this.stats };
  }
}

function decodeDequeue(data: Uint8Array): { key: string; ticket: number; cause: string } | null {
  // Only dequeue entries matter here; decoding every entry with the machine's codec is cheap enough.
  const c = decodeCommandSafe(data);
  return c !== null && c.type === 'dequeue' ? { key: c.key, ticket: c.ticket, cause: c.cause ?? '' } : null;
}

function decodeCommandSafe(data: Uint8Array): (LockCommand & { type: 'dequeue'; key: string; ticket: number; cause?: string }) | null {
  try {
    return decodeCommand(data) as never;
  } catch {
    return null;
  }
}
