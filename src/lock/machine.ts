// The deterministic lock state machine, applied from committed Raft entries in log order.
//
// Determinism is the whole contract: every replica that applies the same entries reaches the same state
// (byte-identical snapshot) and returns the same results. So nothing here reads a clock, a random source
// or the environment. Time is *log time*, made of the leaders' stamps on the entries (see `time` below); it
// never goes back, even when a new leader's clock is behind the old one's.
//
// Rules (SPEC "Guarantees"), judged at the log time of the entry:
//   acquire  wins when the key is free, its lease deadline has passed, or the live lease is the same
//            owner's; every win issues a NEW fencing token = the entry's raft index (so tokens only grow,
//            per key and globally, and are never reused — also across restarts and failovers, because the
//            index is). A same-owner re-acquire supersedes the old token — from cluster level 4 only
//            under the same session (or both under none); under another it is blocked like anyone's
//            (machine-leases.ts `supersedes`).
//   renew    needs a lease with the same owner and token, not yet expired. Refusal reasons are checked in
//            this order: NOT_HELD (no lease at all) > WRONG_OWNER > WRONG_TOKEN > EXPIRED.
//   renews   (level 7, tag 24) the renews of one leader turn in one entry: each applied in order as a lone
//            renew without a request id at the entry's log time, each with its own answer; none is
//            remembered (a renew is idempotent by token: LEASES.md). Below level 7 it is refused as a whole
//            (CLUSTER_LEVEL).
//   release  needs the same owner and token. An expired lease that no `expire` entry has removed yet can
//            still be released by its owner+token: it lets a slow client clean up, and from cluster level 5
//            it ends the lease exactly as expire would — into its lock-delay (see `delay`). Reasons:
//            NOT_HELD > WRONG_OWNER > WRONG_TOKEN (never EXPIRED).
//   expire   removes the lease only if it still has that token and its deadline has passed.
//   revoke   an operator's call: ends the key's hold with that token (0: every hold), a live one with no
//            lock-delay (see `delay`), and hands the key to its line in that entry. From cluster level 5 the
//            entry (tag 23) carries who revokes and its request id, and its first outcome is remembered in
//            the dedup table like every mutation's: a retry answers it (replayed) and ends nothing — not a
//            hold granted since. A tag-23 revoke below level 5 is refused (CLUSTER_LEVEL).
//   first entry of a higher raft term starts a lease epoch: see epoch.ts and LEASES.md.
//   time     at the first entry of a term, log time becomes max(log time, stamp). Within a term, at cluster
//            level 1 it is max(log time, stamp); from level 2 (versions.ts) it advances by how far the stamp
//            passed the term's last stamp. The difference: after a leader whose clock ran ahead, a leader on a
//            true clock stamps below log time, and under max() log time stood still until its clock caught
//            up — a 1 s lease could still be held 4 s later. Progress keeps log time moving at the
//            leader's rate from wherever it is. Both keep LEASES.md's premise: within a term, a difference of
//            log times is at most the difference of one leader's stamps.
//   level    `clusterLevel` raises the cluster level (never lowers it); an entry of a level this build does
//            not read stops the node (UnknownCommandError) rather than being skipped or misapplied.
//   ran      `memberRan` records that a Raft member has run (from level 2; below it, it changes nothing): the
//            first-boot check refuses a bootstrap start of such a member with an empty data dir (identity.ts),
//            on every peer that applied it, restarted or not. Ids are never reused, so the set only grows,
//            bounded by the members ever added.
//   forget   drops every free key freed at or before the entry's `upToMs`; their last tokens are folded into
//            one watermark. Get answers last_token = the watermark for a key the machine has no record of.
//   wait     an acquire with waitMs > 0 that cannot be granted joins the key's wait line (wait-line.ts); a
//            retry of the same (owner, request_id) keeps its place. Every entry that ends a hold (release,
//            expire, and an acquire that finds the hold past its deadline while others wait) hands the key
//            to the head of the line in that same entry (handOff): the grant's token is the entry's index,
//            as for any grant. Waiters whose wait deadline (log time) has passed are skipped and refused.
//            `dequeue` takes a waiter out (deadline passed, or call cancelled). Whoever holds a waiter's call
//            learns the decision from the entry's result (`decided`), so no leader's memory decides a grant
//            or a refusal of a waiter.
//   session  one lease for many holds (session.ts): holds and waiters under a session live exactly as long
//            as it does; its end (close, expiry) drops them all in that one entry and hands each freed key
//            to its line. Sessions ride the same epochs as leases (they are Leases, without a key).
//   delay    a hold acquired with lockDelayMs > 0 that EXPIRES (its lease ran out: an expire entry, or an
//            acquire finding it run out) puts its key in lock-delay until the lease's end + lockDelayMs (log
//            time): nobody is granted the key until then — not a newcomer, not the line, not its own owner.
//            From cluster level 5 a hold that ran out by log time ends as expired whichever entry ends it: a
//            release, a closeSession of its run-out session or a revoke that comes before the expiry entry
//            applies the same delay (machine-leases.ts `endsExpired`, the one rule every path uses). A live
//            hold released, closed or revoked starts no delay. Waiters stay in line; `undelay` (proposed by
//            the leader once the delay has passed) ends it and hands the key to the line.
//   many     (level 3; holds.ts) a key acquired with limit >= 2 (a semaphore) or shared becomes a KeyGroup:
//            many holds, each with its own token, admitted by holds.ts's rule; the line hands off to as many
//            heads as fit, one per entry (a grant's token is its entry's index), the leader proposing a
//            `handOff {key}` for the next one (grantableKeys). A mutex key is unchanged by all of this: it
//            keeps its one Lease in `leases`, and becomes a group only if a shared request reaches the head
//            of its line.
//            The rule keeps SPEC's guarantees: last_token is never below the real value (the watermark is
//            at least every forgotten key's last token, and 0 stays 0 until something is forgotten), and
//            tokens only grow, because a token is the raft index of its acquire entry, which is above every
//            index before it — forgotten keys included. What it gives up is exactness: a forgotten key (or
//            one never used) may report a last_token higher than its own.
//
// Where: this file is the machine's surface — apply, skip, snapshots, digest, restore — over its state
// (machine-state.ts: every collection a snapshot holds, and the bookkeeping every change goes through). The
// parts are functions of that state, each file's header stating its rules, and import one another in one
// direction only (top to bottom):
//   machine-views.ts         the reads (leader, Get, List, metrics, dashboard); LockMachine extends it
//   machine-entries.ts       the dispatch, and a mutex key's acquire, renew, release, expire and revoke
//   machine-group-entries.ts the same entries on a key with many holds, and handOff
//   machine-time.ts          log time, lease epochs, cluster levels, memberRan, forget
//   machine-hand-off.ts      who gets a key when a hold ends; dequeue, undelay, a session's end
//   machine-leases.ts, machine-groups.ts, machine-sessions.ts, machine-wait-lines.ts
//                            a mutex key's lease, a key's many holds, sessions, wait lines: granted, ended
//   machine-digest.ts        the state as snapshot bytes (whole, sliced, rest record) and its digest
//   machine-restore.ts       the state loaded from a decoded snapshot or the store's records
import { CommandDecodeError, decodeCommand, wireLimitViolation } from './commands.js';
import { TAG_LEVELS, UnknownCommandError, tagOf } from './command-tags.js';
import { BASE_LEVEL } from './versions.js';
import type { LockCommand } from './commands.js';
import type { LockEventSink } from './events.js';
import { beginSnapshot, digestOf, snapshotOf, type LockSnapshotJob } from './machine-digest.js';
import { execute } from './machine-entries.js';
import { loadState } from './machine-restore.js';
import type { MachineState } from './machine-state.js';
import { LockMachineViews } from './machine-views.js';
import { decodeState } from './snapshot-decode.js';
import type { DecodedState, DedupRecordSink } from './snapshot.js';
import { SNAPSHOT_SLICE_ITEMS } from './snapshot-writer.js';
import type { ErrorResult, LockMachineOptions, LockResult } from './types.js';

export type { LockSnapshotJob } from './machine-digest.js';

/** The driver applied entries out of order (a gap or a repeat): a bug in the caller, not a bad entry. */
export class LockApplyOrderError extends Error {
  override readonly name = 'LockApplyOrderError';
}

export class LockMachine extends LockMachineViews {
  /** Where the changes go as entries apply (events.ts, Watch); null = nobody listens, nothing is built. */
  get eventSink(): LockEventSink | null {
    return this.s.eventSink;
  }

  set eventSink(sink: LockEventSink | null) {
    this.s.eventSink = sink;
  }

  /** Apply one committed 'normal' entry. Malformed bytes become a no-op `error` result on every replica. */
  apply(index: number, term: number, data: Uint8Array): LockResult {
    this.checkNextIndex(index);
    let command: LockCommand;
    try {
      command = decodeCommand(data, this.options.readLevel);
    } catch (error) {
      if (!(error instanceof CommandDecodeError)) throw error;
      this.s.appliedIndex = index;
      return malformed(index, error.message);
    }
    return execute(this.s, index, term, command);
  }

  /** Apply an already-decoded command (simulator, tests). Checked as decode checks bytes: the same wire
   *  limits, and a command whose tag is above the level this machine reads stops it (UnknownCommandError)
   *  instead of applying — an older build given it would stop, not apply it. */
  applyCommand(index: number, term: number, command: LockCommand): LockResult {
    this.checkNextIndex(index);
    const tag = tagOf(command);
    if ((TAG_LEVELS.get(tag) ?? BASE_LEVEL) > this.options.readLevel) throw new UnknownCommandError(tag, this.options.readLevel);
    const violation = wireLimitViolation(command);
    if (violation !== null) {
      this.s.appliedIndex = index;
      return malformed(index, `invalid ${String(command.type)} command: ${violation}`);
    }
    return execute(this.s, index, term, command);
  }

  /** Account for a committed entry that carries no lock command (raft 'noop' / 'config'). */
  skip(index: number): void {
    this.checkNextIndex(index);
    this.s.appliedIndex = index;
  }

  /** Canonical, compact encoding of the whole state (see snapshot.ts). Same state => same bytes. */
  snapshot(): Uint8Array {
    return snapshotOf(this.s);
  }

  /**
   * Start writing snapshot() of the state as it is now, in slices: call step() (each does a bounded amount
   * of work) until it returns true, applying entries in between as usual, then finish() returns exactly the
   * bytes snapshot() would have returned now. One at a time: beginning another cancels this one.
   * `sizeHint` (the previous snapshot's size) saves the buffer from growing by copies; `sliceItems` is
   * how many keys or dedup records one step handles (tests make it tiny to force many slices).
   */
  beginSnapshot(sizeHint = 0, sliceItems = SNAPSHOT_SLICE_ITEMS): LockSnapshotJob {
    return beginSnapshot(this.s, sizeHint, sliceItems);
  }

  /** 64-bit hex fingerprint of snapshot(): replicas in the same state have the same digest. */
  digest(): string {
    return digestOf(this.s);
  }

  /**
   * Rebuild a machine from snapshot() bytes. Zero bytes = the empty machine at index 0 (the Raft bootstrap
   * snapshot carries no application data). Throws SnapshotDecodeError on corrupt input. `options` must be
   * the cluster-wide ones (they are not part of the snapshot).
   */
  static restore(bytes: Uint8Array, options: Partial<LockMachineOptions> = {}): LockMachine {
    const machine = new LockMachine(options);
    if (bytes.length === 0) return machine;
    loadState(machine.s, decodeState(bytes, machine.s.dedup.restoreSink(), machine.options.readLevel), bytes.length);
    return machine;
  }

  /**
   * A machine from a decoded state (store-records.ts builds one from the applied store's records):
   * `decode` gets the new machine's dedup sink, feeds it the remembered requests oldest first, and returns
   * the rest of the state. The same checks as restore(); `at` names where a failure is reported.
   */
  static fromDecoded(
    options: Partial<LockMachineOptions>,
    decode: (dedupSink: DedupRecordSink, readLevel: number) => DecodedState,
    at = 0,
  ): LockMachine {
    const machine = new LockMachine(options);
    loadState(machine.s, decode(machine.s.dedup.restoreSink(), machine.options.readLevel), at);
    return machine;
  }

  /** @internal The state's parts, for store-records.ts (which reads them the way the snapshot writer does). */
  get parts(): MachineState {
    return this.s;
  }

  /** The state but its keys and remembered requests: the snapshot format with neither (store-records.ts keeps
   *  those one record each) — the header, lines, delays, values, sessions, levels and groups. */
  restSnapshot(): Uint8Array {
    return snapshotOf(this.s, false);
  }

  private checkNextIndex(index: number): void {
    if (index !== this.s.appliedIndex + 1) {
      throw new LockApplyOrderError(
        `expected entry ${this.s.appliedIndex + 1}, got ${index}: entries must be applied (or skipped) in order, once`,
      );
    }
  }
}

function malformed(index: number, message: string): ErrorResult {
  return { type: 'error', index, code: 'MALFORMED_COMMAND', message };
}
