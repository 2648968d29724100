// Hearing a node our configuration does not list yet: a node added while we were down may now lead, and
// our log cannot list it until we hear from it. We ask the members we know; only a member of our own
// cluster's configuration vouches, so a removed node or a stranger stays refused (peer-admission.ts).
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { ConfState } from '../../raft/core/types.js';
import type { AddressBook } from './address-book.js';
import { askPeers } from './identity.js';

export interface VouchingOptions {
  selfId: string;
  addresses: AddressBook;
  configuration(): ConfState | null;
  dialCredentials(): grpc.ChannelCredentials;
  /** The members vouched for `from`: hear it (PeerTransport.vouch). */
  vouch(from: string): void;
  askTimeoutMs: number;
  logger: Logger;
}

/** The transport's onUnknownSender: ask the members about `from`, and vouch when one of them lists it. */
export function askMembersAbout(opts: VouchingOptions): (from: string) => void {
  return (from) => {
    const conf = opts.configuration();
    const asked = [...(conf ? [...conf.voters, ...conf.learners] : [])]
      .filter((m) => m !== opts.selfId)
      .map((m) => opts.addresses.dialAddressOf(m))
      .filter((a): a is string => a !== undefined);
    void askPeers(asked, opts.dialCredentials(), opts.askTimeoutMs).then((answers) => {
      const ours = opts.configuration()?.clusterId ?? '';
      const vouched = answers.find((a) => (ours === '' || a.status.cluster_id === ours) && a.status.members.some((m) => m.id === from));
      if (!vouched) return;
      const entry = vouched.status.members.find((m) => m.id === from)!;
      if (entry.address) opts.addresses.learned(from, entry.address);
      opts.vouch(from);
      opts.logger.info(
        { nodeId: opts.selfId, from, vouchedBy: vouched.status.node_id },
        `hearing ${from}: our configuration does not list it yet, but ${vouched.status.node_id} says it is a member`,
      );
    });
  };
}
