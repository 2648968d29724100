// leasehold.v1.Cluster: Status (served locally, never forwarded: it is this node's own view) and the
// membership RPCs (served by the leader; a follower forwards them once, like Lock calls).
import * as grpc from '@grpc/grpc-js';
import type { ConfState } from '../../raft/core/types.js';
import { NodeStoppedError, NotLeaderError, ProposalDroppedError, ProposalTimeoutError, ConfChangeRefusedError } from '../../raft/errors.js';
import type { NodeLogger } from '../../raft/logger.js';
import type { RaftNode } from '../../raft/node.js';
import { roleToWire } from '../../wire/cluster.js';
import { NODE_CHANNEL_BACKOFF } from '../../transport/peer-link.js';
import type { WireInput } from '../../wire/scalars.js';
import {
  type ClusterStub,
  type ClusterHandlers,
  type ClusterMethod,
  clusterGrpcService,
  type Member,
  type SnapshotRequest,
} from '../../wire/cluster.js';
import { Membership, MembershipArgumentError, MembershipPreconditionError } from './membership.js';
import { FORWARDED_METADATA, routeNotLeader } from './forward-once.js';
import { statusError } from './status-error.js';
import { callForwarded } from './forward-unary.js';
import { paceShare, paced, type PaceClock } from './backup-pace.js';
import { expiredBeforeForwardingDetails, pastDeadline } from '../../transport/forward-calls.js';

/** The backup stream's pauses: real time (the pacing's tests run on a fake clock). */
const REAL_PACE_CLOCK: PaceClock = {
  nowMs: () => performance.now(),
  sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
};

export interface ClusterApiOptions {
  node: RaftNode<unknown>;
  membership: Membership;
  /** SPEC "Health": what this node's grpc.health.v1 reports, and why. */
  health(): { serving: boolean; reason: string };
  /** The cluster level this node's applied log reached, and the highest its build reads (versions.ts). */
  levels(): { cluster: number; build: number };
  /** Whether the applied log records member `id` as having run (machine.ts `ran`). */
  hasRun(id: string): boolean;
  /** Where clients reach node `id` (its gRPC address): forwarding goes there. */
  clientAddressOf(id: string): string | undefined;
  /** Credentials for calls this node makes to its peers' client port (forwarding). */
  credentials(): grpc.ChannelCredentials;
  defaultTimeoutMs: number;
  logger: NodeLogger;
  /** The bytes of a backup of this node's applied state (src/state/backup.ts), or null while it has none. */
  backup(): AsyncIterable<Uint8Array> | null;
}

type Reply<T> = (err: grpc.ServiceError | null, value?: WireInput<T>) => void;

export class ClusterApi {
  private forwardClients = new Map<string, ClusterStub>();

  constructor(private readonly opts: ClusterApiOptions) {}

  close(): void {
    for (const c of this.forwardClients.values()) c.close();
    this.forwardClients.clear();
  }

  members(conf: ConfState | null): WireInput<Member>[] {
    if (!conf) return [];
    const progress = this.opts.node.progress();
    const row = (id: string, learner: boolean): WireInput<Member> => ({
      id,
      address: this.opts.clientAddressOf(id) ?? conf.addresses[id] ?? '',
      voter: !learner,
      learner,
      match_index: String(progress.get(id)?.match ?? 0),
      seen: id === this.opts.node.id || this.opts.node.everHeard(id),
      ran: this.opts.hasRun(id),
    });
    return [...conf.voters.map((id) => row(id, false)), ...conf.learners.map((id) => row(id, true))];
  }

  handlers(): ClusterHandlers {
    const node = this.opts.node;
    const m = this.opts.membership;
    return {
      Status: (_call, cb) => {
        const st = node.status();
        const conf = node.configuration();
        const health = this.opts.health();
        cb(null, {
          serving: health.serving,
          health: health.reason,
          node_id: st.id,
          role: roleToWire(st.role),
          term: String(st.term),
          leader_id: st.leaderId ?? '',
          commit_index: String(st.commitIndex),
          applied_index: String(st.appliedIndex),
          members: this.members(conf),
          cluster_id: conf?.clusterId ?? '',
          cluster_level: this.opts.levels().cluster,
          build_level: this.opts.levels().build,
        });
      },
      AddMember: (call, cb) =>
        this.serve(call, cb, 'AddMember', async (t) => ({
          members: this.members(await m.add(call.request.id, call.request.address, call.request.learner, t)),
        })),
      PromoteMember: (call, cb) =>
        this.serve(call, cb, 'PromoteMember', async (t) => ({ members: this.members(await m.promote(call.request.id, t)) })),
      RemoveMember: (call, cb) =>
        this.serve(call, cb, 'RemoveMember', async (t) => ({ members: this.members(await m.remove(call.request.id, t)) })),
      Snapshot: (call) => this.streamBackup(call),
      TransferLeader: (call, cb) =>
        this.serve(call, cb, 'TransferLeader', async (t) => {
          const r = await m.transfer(call.request.to_id, t);
          return { leader_id: r.leaderId, term: String(r.term) };
        }),
    };
  }

  /** Streams a backup, waiting for the client when grpc-js's buffer is full (a big state never piles up). */
  private streamBackup(call: grpc.ServerWritableStream<unknown, unknown>): void {
    const request = call.request as (SnapshotRequest & { __invalid?: string }) | null;
    const share = request?.__invalid !== undefined ? { invalid: request.__invalid } : paceShare(request?.pace_percent);
    if (typeof share !== 'number') {
      call.emit('error', statusError(grpc.status.INVALID_ARGUMENT, share.invalid));
      return;
    }
    const chunks = this.opts.backup();
    if (chunks === null) {
      call.emit('error', statusError(grpc.status.FAILED_PRECONDITION, 'this node holds no applied state yet'));
      return;
    }
    void (async () => {
      let bytes = 0;
      try {
        for await (const data of paced(chunks, share, REAL_PACE_CLOCK)) {
          if (call.cancelled) return;
          bytes += data.length;
          if (!call.write({ data })) await new Promise((resolve) => call.once('drain', resolve));
        }
        call.end();
        this.opts.logger.info({ nodeId: this.opts.node.id, bytes }, 'backup streamed');
      } catch (err) {
        this.opts.logger.warn({ nodeId: this.opts.node.id, err: (err as Error).message }, 'backup failed');
        call.emit('error', statusError(grpc.status.FAILED_PRECONDITION, `backup failed: ${(err as Error).message}`));
      }
    })();
  }

  private serve<Res>(
    call: grpc.ServerUnaryCall<unknown, unknown>,
    cb: Reply<Res>,
    method: ClusterMethod,
    run: (timeoutMs: number) => Promise<WireInput<Res>>,
  ): void {
    const decodeError = (call.request as { __invalid?: string } | null)?.__invalid;
    if (decodeError) {
      cb(statusError(grpc.status.INVALID_ARGUMENT, decodeError));
      return;
    }
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : Infinity;
    // Membership changes may wait for a learner to catch up: allow up to a minute unless the caller says less.
    const timeoutMs = Math.max(1, Math.min(60_000, deadlineMs - Date.now()));
    run(timeoutMs).then(
      (res) => cb(null, res),
      (err: unknown) => {
        const route =
          err instanceof NotLeaderError
            ? routeNotLeader(this.opts.node.id, err.leaderId, call.metadata.get(FORWARDED_METADATA).length > 0)
            : null;
        if (route?.action === 'forward') {
          this.forward(method, call.request, route.to, Number.isFinite(deadlineMs) ? deadlineMs : Date.now() + timeoutMs, cb);
          return;
        }
        cb(this.toStatus(err));
      },
    );
  }

  private forward<Res>(method: ClusterMethod, request: unknown, leaderId: string, deadlineMs: number, cb: Reply<Res>): void {
    // Served here first, until the refusal: the caller's deadline may have passed by now. Such a call is
    // answered here and not sent on, nor a client to the leader made for it (forward-calls.ts pastDeadline:
    // why 0 ms); grpc-js would fail it at once too, but only after a client to the leader was made and the
    // call started on it.
    if (pastDeadline(deadlineMs - Date.now())) {
      cb(statusError(grpc.status.DEADLINE_EXCEEDED, expiredBeforeForwardingDetails(leaderId)));
      return;
    }
    const address = this.opts.clientAddressOf(leaderId);
    if (!address) {
      cb(statusError(grpc.status.UNAVAILABLE, `the leader ${leaderId} has no known address; retry`));
      return;
    }
    let client = this.forwardClients.get(address);
    if (!client) {
      client = clusterGrpcService.client(address, this.opts.credentials(), { ...NODE_CHANNEL_BACKOFF });
      this.forwardClients.set(address, client);
    }
    callForwarded(client, method, request, leaderId, deadlineMs, (err, value) => {
      if (err) cb(statusError(err.code, err.details));
      else cb(null, value as WireInput<Res>);
    });
  }

  private toStatus(err: unknown): grpc.ServiceError {
    if (err instanceof MembershipArgumentError) return statusError(grpc.status.INVALID_ARGUMENT, err.message);
    if (err instanceof MembershipPreconditionError) return statusError(grpc.status.FAILED_PRECONDITION, err.message);
    if (err instanceof ConfChangeRefusedError) return statusError(grpc.status.UNAVAILABLE, `${err.message}`);
    if (err instanceof NotLeaderError || err instanceof NodeStoppedError || err instanceof ProposalDroppedError) {
      return statusError(grpc.status.UNAVAILABLE, err.message);
    }
    if (err instanceof ProposalTimeoutError)
      return statusError(
        grpc.status.DEADLINE_EXCEEDED,
        `the change was not confirmed in time; its outcome is unknown — check with 'leasehold members list'`,
      );
    this.opts.logger.error({ err: String(err) }, 'unexpected error serving a cluster call');
    return statusError(grpc.status.INTERNAL, `internal error: ${(err as Error)?.message ?? String(err)}`);
  }
}
