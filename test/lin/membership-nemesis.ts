// Membership changes during a chaos run, through the Cluster service an operator uses (SPEC "Membership"):
// add a fresh id as a learner and promote it once it caught up, add one as a voter, remove a follower or
// the leader, replace a node (remove it, then add a fresh id with a fresh data dir through --join).
//
// Ids are never reused: each add takes the next unused spare id of the harness (n<size+1>, ...). The size
// stays within [original, original + 1] — an add at original+1 becomes a removal, a removal at the original
// size becomes a replacement — so a quorum of the original size is always there (faults run one at a time).
// After every change the run's idea of the membership is re-read from the leader (what committed, not what
// we asked for), so a change whose answer was lost is still accounted for.
import { EndpointPool, RpcError } from '../../src/client/rpc.js';
import type { MembersResponse, StatusResponse, TransferLeaderResponse } from '../../src/wire/cluster.js';
import type { TestCluster } from '../integration/harness.js';
import { waitFor } from '../integration/harness.js';
import type { NodePorts } from './node-ports.js';

export interface MembershipView {
  voters: string[];
  learners: string[];
}

export class MembershipNemesis {
  /** Current members (voters and learners) as the leader last reported them, in id order. */
  members: string[];
  private readonly unused: string[];
  readonly originalSize: number;

  constructor(
    private readonly cluster: TestCluster,
    private readonly ports: NodePorts,
    private readonly log: (msg: string) => void,
  ) {
    this.members = [...cluster.bootstrapIds];
    this.unused = cluster.spareIds.filter((id) => !ports.lost.includes(id));
    this.originalSize = this.members.length;
  }

  /** (Re)start a node: a spare id from the join file (with data, --join is ignored and it resumes its log). */
  startNode(id: string): void {
    const child = this.ports.start(id, { join: this.cluster.spareIds.includes(id) });
    this.log(`node ${id} started pid ${child?.pid}`);
  }

  get canGrow(): boolean {
    return this.members.length < this.originalSize + 1 && this.unused.length > 0;
  }

  get canShrink(): boolean {
    return this.members.length > this.originalSize;
  }

  get canReplace(): boolean {
    return this.unused.length > 0;
  }

  /** Add the next unused id (as a learner then promoted, or as a voter), start it with --join, wait for it.
   *  The id is burned whatever happens (never reused). */
  async add(asLearner: boolean): Promise<string | null> {
    const id = this.unused.shift();
    if (!id) return null;
    const added = await this.call('AddMember', { id, address: this.cluster.endpoint(id), learner: asLearner }).catch((err: Error) => err);
    // The answer may be lost while the change committed: what the leader reports decides.
    await this.refresh();
    if (!this.members.includes(id))
      throw added instanceof Error ? added : new Error(`${id}: AddMember answered, but the leader does not list it`);
    const child = this.ports.start(id, { join: true });
    this.log(`membership: ${id} added${asLearner ? ' as a learner' : ' as a voter'}; started with --join pid ${child?.pid}`);
    await this.caughtUp(id);
    if (asLearner) {
      await this.call('PromoteMember', { id }).finally(() => this.refresh());
      this.log(`membership: ${id} promoted`);
    }
    return id;
  }

  /** Remove `id` (the leader too: it hands over once its removal commits), then stop its process. */
  async remove(id: string): Promise<void> {
    try {
      await this.call('RemoveMember', { id });
      this.log(`membership: ${id} removed`);
    } finally {
      await this.refresh();
      if (!this.members.includes(id)) await this.cluster.kill(id);
    }
  }

  /** Hand the leadership to `id` (TransferLeader; answers once it is in office). */
  async transferLeader(id: string): Promise<void> {
    await this.call<TransferLeaderResponse>('TransferLeader', { to_id: id });
    this.log(`membership: leadership transferred to ${id}`);
  }

  /** The leader's view of the configuration; `members` follows it. */
  async refresh(): Promise<MembershipView | null> {
    const view = await waitFor(
      'the leader to report the membership',
      async () => {
        const sts = await Promise.all(this.candidates().map((id) => this.cluster.status(id, 800).catch(() => null)));
        const leader = sts
          .filter((s): s is StatusResponse => s !== null && s.role === 'LEADER')
          .sort((a, b) => Number(BigInt(b.term) - BigInt(a.term)))[0];
        if (!leader) return null;
        return {
          voters: leader.members.filter((m) => !m.learner).map((m) => m.id),
          learners: leader.members.filter((m) => m.learner).map((m) => m.id),
        };
      },
      20_000,
      100,
    ).catch(() => null);
    if (view) this.members = [...view.voters, ...view.learners].sort(byId);
    return view;
  }

  /** Ids worth asking: the members we know and any started node (a change may have committed unseen). */
  private candidates(): string[] {
    return [...new Set([...this.members, ...this.cluster.procs.keys()])];
  }

  private async caughtUp(id: string): Promise<void> {
    await waitFor(
      `${id} to catch up`,
      async () => {
        const s = await this.cluster.status(id, 800);
        return s.leader_id !== '' && BigInt(s.applied_index) > 0n ? s : null;
      },
      20_000,
      100,
    );
  }

  /** A Cluster call through the live members, retried on UNAVAILABLE (an election) for up to 15 s. */
  private async call<Res = MembersResponse>(
    method: 'AddMember' | 'PromoteMember' | 'RemoveMember' | 'TransferLeader',
    request: object,
  ): Promise<Res> {
    const endpoints = this.members.filter((m) => this.cluster.procs.has(m)).map((m) => this.cluster.endpoint(m));
    const pool = new EndpointPool({
      endpoints: endpoints.length ? endpoints : this.cluster.endpoints(this.members),
      attemptTimeoutMs: 5000,
    });
    const deadline = Date.now() + 15_000;
    try {
      for (;;) {
        try {
          return await pool.clusterCall<Res>(method, request, Math.min(deadline, Date.now() + 6000));
        } catch (err) {
          // FAILED_PRECONDITION (another change pending, a learner not caught up yet) is worth a retry too.
          if (!(err instanceof RpcError) || Date.now() > deadline) throw err;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    } finally {
      pool.close();
    }
  }
}

function byId(a: string, b: string): number {
  return Number(a.slice(1)) - Number(b.slice(1)) || a.localeCompare(b);
}
