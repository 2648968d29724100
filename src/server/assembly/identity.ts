// Cluster identity (SPEC "Identity"): the cluster id fixed at bootstrap, and the first-boot check that
// keeps a node whose data dir was wiped from rejoining as the voter it used to be — having forgotten
// its votes and its log, it could vote twice in a term and help elect a leader without entries it had
// acknowledged (etcd refuses the same case: "member has already been bootstrapped").
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { NodeConfig } from '../../config/types.js';
import { clusterGrpcService, type StatusResponse } from '../../wire/cluster.js';

/** Derived from the initial members, so every node bootstrapped from the same file agrees on it. */
export function clusterIdFor(nodes: readonly Pick<NodeConfig, 'id' | 'address'>[]): string {
  const members = nodes.map((n) => `${n.id}@${n.address}`).sort();
  return createHash('sha256')
    .update(`leasehold-cluster\n${members.join('\n')}`)
    .digest('hex')
    .slice(0, 16);
}

export interface PeerAnswer {
  address: string;
  status: StatusResponse;
}

/** Ask each address for its Status, in parallel, within `timeoutMs`; unreachable ones are left out. */
export async function askPeers(addresses: string[], credentials: grpc.ChannelCredentials, timeoutMs: number): Promise<PeerAnswer[]> {
  const answers = await Promise.all(
    addresses.map(
      (address) =>
        new Promise<PeerAnswer | null>((resolve) => {
          const client = clusterGrpcService.client(address, credentials);
          client.Status({}, { deadline: new Date(Date.now() + timeoutMs) }, (err, status) => {
            client.close();
            resolve(err || !status ? null : { address, status });
          });
        }),
    ),
  );
  return answers.filter((a): a is PeerAnswer => a !== null);
}

export class AlreadyBootstrappedError extends Error {
  override readonly name = 'AlreadyBootstrappedError';
}

/**
 * First boot in bootstrap mode. Refuse when a peer reports a running cluster (a term > 0) that has this
 * node as a member AND shows that this node ran before: the peer's log records it as having run (`ran`,
 * from cluster level 2: a memberRan entry, which survives the peer's restarts), the peer has heard from it
 * since the peer started, or the leader has a match index for it. A member that simply never ran yet (it starts after the others
 * of a new cluster elected a leader — a staggered first start) goes on: it has lost nothing. Also refuse
 * when the running cluster does not list this node at all (it must be added and started with --join).
 * Peers that know nothing yet (term 0: the cluster is being bootstrapped right now) let us go on.
 * Limit: before the cluster reached level 2 (or in the moment between a member's first acknowledgement and
 * the commit of its memberRan entry), a wiped node whose peers have all restarted since it last ran looks
 * like one that never ran.
 */
export function checkFirstBoot(selfId: string, dataDir: string, answers: PeerAnswer[]): void {
  for (const { address, status } of answers) {
    if (Number(status.term) === 0 && Number(status.commit_index) === 0) continue;
    const me = status.members.find((m) => m.id === selfId);
    if (me && !me.seen && !me.ran && Number(me.match_index) === 0) continue;
    const known = me !== undefined;
    if (known) {
      throw new AlreadyBootstrappedError(
        `node ${selfId} is already a member of cluster ${status.cluster_id || '(unknown)'} (its peer ${status.node_id} at ${address} says so, at term ${status.term}), ` +
          `but its data dir ${dataDir} is empty: it would rejoin having forgotten its votes and its log. ` +
          `To replace it: 'leasehold members remove ${selfId}', then 'leasehold members add <new-id> <address>' and start the new node with 'leasehold serve --join'. ` +
          `If this node has truly never run (a first start after the others), start it once with --join.`,
      );
    }
    throw new AlreadyBootstrappedError(
      `a cluster is already running (${status.node_id} at ${address} is at term ${status.term}) and node ${selfId} is not one of its members: ` +
        `add it with 'leasehold members add ${selfId} <address>' and start it with 'leasehold serve --join'.`,
    );
  }
}
