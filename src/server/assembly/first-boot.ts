// What a node does before it bootstraps an empty data dir: ask the other members first. A normal start
// refuses to bootstrap a node the cluster already knows (identity.ts checkFirstBoot: a wiped data dir);
// `serve --join` never bootstraps — it dials every member the cluster reports, stamps its messages with
// the cluster's id, and waits for the leader to contact it.
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { NodeConfig } from '../../config/types.js';
import type { PeerTransport } from '../../transport/grpc.js';
import { askPeers, checkFirstBoot } from './identity.js';

export interface FirstBootOptions {
  selfId: string;
  dataDir: string;
  join: boolean;
  nodes: readonly NodeConfig[];
  /** The other members' client addresses as this node dials them. */
  others: string[];
  transport: PeerTransport;
  dialCredentials(): grpc.ChannelCredentials;
  askTimeoutMs: number;
  logger: Logger;
}

export async function beforeBootstrap(o: FirstBootOptions): Promise<void> {
  const answers = await askPeers(o.others, o.dialCredentials(), o.askTimeoutMs);
  if (!o.join) {
    checkFirstBoot(o.selfId, o.dataDir, answers);
    return;
  }
  // Joining: dial every member the cluster reports, so our answers reach the leader even when the file
  // does not list it.
  const peers = new Map<string, string>(o.nodes.filter((n) => n.id !== o.selfId).map((n) => [n.id, n.address]));
  for (const a of answers) for (const m of a.status.members) if (m.id !== o.selfId && m.address) peers.set(m.id, m.address);
  o.transport.setPeers(peers);
  // Stamp our messages with the cluster's id from the start (else '' until our log tells us).
  const clusterId = answers.map((a) => a.status.cluster_id).find((c) => c !== '') ?? '';
  o.transport.setIdentity({ clusterId, members: new Set() });
  o.logger.info(
    { nodeId: o.selfId, clusterId, asked: o.others, answered: answers.map((a) => a.status.node_id), peers: Object.fromEntries(peers) },
    'joining: waiting for the leader to contact us',
  );
}
