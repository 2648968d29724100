// Where this node reaches every other member. The config file seeds it; from then on the configuration in
// the Raft log says who the members are and where (onConf), and the members' answers add nodes our log
// does not list yet (learned). Client addresses serve forwarding and status answers; peer addresses feed
// the peer transport.
import type { ConfState } from '../../raft/core/types.js';
import type { NodeConfig } from '../../config/types.js';

export class AddressBook {
  /** Client address of each member (a live map: the client API and the quorum watch read it as it changes). */
  readonly clientAddress: Map<string, string>;
  private readonly fileClientAddress: ReadonlyMap<string, string>;
  /** Peer addresses from the file (a node's peerAddress when it has one): they seed the first boot. */
  private readonly filePeerAddress: ReadonlyMap<string, string>;
  /** Every peer address we ever learned: a leader being removed keeps leading until its removal commits,
   *  and our answers must still reach it after our own log has dropped it (thesis §4.2.2). */
  private readonly knownPeerAddress: Map<string, string>;
  /** nodes[].peerDialOverrides of this node: where it dials those members instead (never what it advertises). */
  readonly dialOverrides: ReadonlyMap<string, string>;

  constructor(nodes: readonly NodeConfig[], self: NodeConfig) {
    this.clientAddress = new Map(nodes.map((n) => [n.id, n.address]));
    this.fileClientAddress = new Map(this.clientAddress);
    this.filePeerAddress = new Map(nodes.map((n) => [n.id, n.peerAddress ?? n.address]));
    this.knownPeerAddress = new Map(this.filePeerAddress);
    this.dialOverrides = new Map(Object.entries(self.peerDialOverrides ?? {}));
  }

  /** The peer addresses of the file, by id (the bootstrap configuration carries them). */
  get filePeers(): ReadonlyMap<string, string> {
    return this.filePeerAddress;
  }

  /** Where this node dials `member`'s client port. */
  dialAddressOf(member: string): string | undefined {
    return this.dialOverrides.get(member) ?? this.clientAddress.get(member);
  }

  /** A member told us where `id` is (our log does not list it yet). */
  learned(id: string, address: string): void {
    this.knownPeerAddress.set(id, address);
    if (!this.clientAddress.has(id)) this.clientAddress.set(id, address);
  }

  /** A configuration took effect: a member added at runtime is reached at the address it was added with
   *  (for clients and peers alike, unless the file lists it with a separate peerAddress). */
  onConf(conf: ConfState): void {
    for (const member of [...conf.voters, ...conf.learners]) {
      const address = conf.addresses[member] ?? this.filePeerAddress.get(member);
      if (address === undefined) continue;
      this.knownPeerAddress.set(member, address);
      this.clientAddress.set(member, this.fileClientAddress.get(member) ?? address);
    }
  }

  /** The peers to keep links to under `conf`: its members, and the leader we follow even when it is leaving. */
  peersFor(conf: ConfState, leaderId: string | null): Map<string, string> {
    const peers = new Map<string, string>();
    for (const member of [...conf.voters, ...conf.learners, ...(leaderId ? [leaderId] : [])]) {
      const address = conf.addresses[member] ?? this.knownPeerAddress.get(member);
      if (address !== undefined) peers.set(member, address);
    }
    return peers;
  }
}
