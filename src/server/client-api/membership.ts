// The operator's membership operations on the leader, over the driver's proposeConfChange (the core
// enforces one change at a time and the new-leader rule; see src/raft/core/conf.ts). What is added
// here is the judgement a careful operator would otherwise have to make by hand:
//  - a voter is added or removed only if the cluster keeps a quorum of voters it has heard from
//    recently (etcd's strict-reconfig-check): adding a voter that is not running to a 3-node cluster
//    with one node down would stop all writes;
//  - a learner is promoted only once it has caught up with the log (it would otherwise count toward a
//    quorum while still copying it);
//  - leadership transfer waits until the new leader is in office.
import { NODE_ID_RULE, isNodeId } from '../../config/node-id.js';
import { parseAddress } from '../../config/validate.js';
import { quorumOf } from '../../raft/core/quorum.js';
import type { ConfState, NodeId } from '../../raft/core/types.js';
import type { NodeEnv } from '../../raft/env.js';
import { ConfChangeRefusedError, NotLeaderError } from '../../raft/errors.js';
import type { RaftNode } from '../../raft/node.js';

/** A change that cannot be made as asked (FAILED_PRECONDITION on the wire). */
export class MembershipPreconditionError extends Error {
  override readonly name = 'MembershipPreconditionError';
}

/** A malformed request (INVALID_ARGUMENT). */
export class MembershipArgumentError extends Error {
  override readonly name = 'MembershipArgumentError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

export function checkNodeId(id: string, field = 'id'): void {
  if (!isNodeId(id)) throw new MembershipArgumentError(field, `'${id}' is not a node id: use ${NODE_ID_RULE}`);
}

/** The config file's address rule (parseAddress), so an address `members add` takes is one a config takes. */
export function checkAddress(address: string, field = 'address'): void {
  const parsed = parseAddress(address);
  if (typeof parsed === 'string') throw new MembershipArgumentError(field, `'${address}' is not host:port: ${parsed}`);
}

export interface MembershipOptions {
  env: NodeEnv;
  /** The election timeout in ms: "recently heard from" and the catch-up poll are measured in it. */
  electionTimeoutMs: number;
}

export class Membership {
  constructor(
    private readonly node: RaftNode<unknown>,
    private readonly opts: MembershipOptions,
  ) {}

  private conf(): ConfState {
    const c = this.node.configuration();
    if (!c) throw new NotLeaderError(this.node.leaderId, 'this node has no configuration yet');
    return c;
  }

  private requireLeader(): void {
    if (!this.node.isLeader()) throw new NotLeaderError(this.node.leaderId);
  }

  /** Voters we heard from within an election timeout (ourselves included), per the driver. */
  private liveVoters(voters: NodeId[]): NodeId[] {
    return voters.filter((id) => id === this.node.id || this.node.heardWithin(id, this.opts.electionTimeoutMs));
  }

  async add(id: string, address: string, learner: boolean, timeoutMs: number): Promise<ConfState> {
    checkNodeId(id);
    checkAddress(address);
    this.requireLeader();
    if (!learner) {
      const voters = [...this.conf().voters, id];
      const live = this.liveVoters(this.conf().voters).length; // the new one is not running yet, as far as we know
      const quorum = quorumOf(voters.length);
      if (live < quorum) {
        throw new MembershipPreconditionError(
          `adding ${id} as a voter would need ${quorum} live voters for a quorum, and only ${live} answer now; add it with --learner, start it, then promote it`,
        );
      }
    }
    await this.propose({ type: 'add', id, address, learner }, timeoutMs);
    return this.conf();
  }

  async promote(id: string, timeoutMs: number): Promise<ConfState> {
    checkNodeId(id);
    this.requireLeader();
    const conf = this.conf();
    if (conf.voters.includes(id)) throw new MembershipPreconditionError(`${id} is already a voter`);
    if (!conf.learners.includes(id)) throw new MembershipPreconditionError(`${id} is not a learner of this cluster`);
    // Caught up: its match reached what was committed when we were asked (under load the log moves on;
    // the target is fixed so that a busy cluster can still promote).
    const target = this.node.status().commitIndex;
    const deadline = this.opts.env.nowMs() + timeoutMs;
    for (;;) {
      this.requireLeader();
      const match = this.node.progress().get(id)?.match ?? 0;
      if (match >= target) break;
      if (this.opts.env.nowMs() >= deadline) {
        throw new MembershipPreconditionError(
          `${id} has not caught up with the log (it has ${match} of ${target} entries); is it running with --join?`,
        );
      }
      await sleep(this.opts.env, Math.min(50, this.opts.electionTimeoutMs));
    }
    await this.propose({ type: 'promote', id }, Math.max(1, deadline - this.opts.env.nowMs()));
    return this.conf();
  }

  async remove(id: string, timeoutMs: number): Promise<ConfState> {
    checkNodeId(id);
    this.requireLeader();
    const conf = this.conf();
    if (conf.voters.includes(id)) {
      const rest = conf.voters.filter((v) => v !== id);
      const live = this.liveVoters(rest).length;
      const quorum = quorumOf(rest.length);
      if (rest.length > 0 && live < quorum) {
        throw new MembershipPreconditionError(
          `removing ${id} would leave ${rest.length} voters with only ${live} answering, short of a quorum of ${quorum}`,
        );
      }
    }
    // Removing the leader itself: the core keeps leading until the entry commits, then hands over with
    // TimeoutNow and steps down (raft.ts tickLeader), so the answer comes from the outgoing leader.
    await this.propose({ type: 'remove', id }, timeoutMs);
    return this.conf();
  }

  async transfer(toId: string, timeoutMs: number): Promise<{ leaderId: string; term: number }> {
    this.requireLeader();
    const conf = this.conf();
    let target = toId;
    if (target === '') {
      let best: { id: string; match: number } | null = null;
      for (const [peer, pr] of this.node.progress()) {
        if (peer === this.node.id || !conf.voters.includes(peer)) continue;
        if (!best || pr.match > best.match) best = { id: peer, match: pr.match };
      }
      if (!best) throw new MembershipPreconditionError('there is no other voter to hand leadership to');
      target = best.id;
    } else {
      checkNodeId(target, 'to_id');
    }
    if (target === this.node.id) return { leaderId: target, term: this.node.term };
    if (!conf.voters.includes(target)) throw new MembershipPreconditionError(`${target} is not a voter of this cluster`);
    if (!this.node.transferLeadership(target)) throw new MembershipPreconditionError(`leadership cannot be handed to ${target} now`);
    const deadline = this.opts.env.nowMs() + timeoutMs;
    while (this.opts.env.nowMs() < deadline) {
      if (!this.node.isLeader() && this.node.leaderId === target) return { leaderId: target, term: this.node.term };
      await sleep(this.opts.env, 10);
    }
    throw new MembershipPreconditionError(
      `${target} did not take over within ${timeoutMs} ms (leader now: ${this.node.leaderId ?? 'none'})`,
    );
  }

  private async propose(change: Parameters<RaftNode<unknown>['proposeConfChange']>[0], timeoutMs: number): Promise<void> {
    try {
      await this.node.proposeConfChange(change, timeoutMs);
    } catch (err) {
      if (err instanceof ConfChangeRefusedError && err.kind !== 'not-ready') throw new MembershipPreconditionError(err.message);
      throw err;
    }
  }
}

function sleep(env: NodeEnv, ms: number): Promise<void> {
  return new Promise((resolve) => env.scheduler.after(ms, resolve));
}
