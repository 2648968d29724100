// The peer transport over gRPC (etcd's rafthttp transport): one PeerLink per peer carries this node's
// one-way Raft messages on a long-lived client stream (see proto/leasehold/v1/raft.proto); replies come back
// on the peer's own stream to us. The server side is two handlers sharing one admission: the Raft stream
// (raft-stream-server.ts) and the Forward stream of lock calls (forward-server.ts). Membership changes at
// runtime: setPeers() opens links to new members and closes removed ones.
import * as grpc from '@grpc/grpc-js';
import type { Message, NodeId } from '../raft/core/types.js';
import type { NodeLogger } from '../raft/logger.js';
import type { PeerSender } from '../raft/peer-sender.js';
import { BASE_LEVEL, LEVEL_PEER_BATCHES } from '../lock/versions.js';
import type { ForwardStream } from './forward.js';
import { serveForwardStream, type ForwardedCallHandler } from './forward-server.js';
import { PeerAdmission, type PeerIdentity } from './peer-admission.js';
import type { PeerAuthenticator } from './peer-auth.js';
import { PeerLink, type PeerLinkOptions } from './peer-link.js';
import type { RaftHandlers } from '../wire/raft.js';
import { serveRaftStream } from './raft-stream-server.js';

export interface PeerTransportOptions extends PeerLinkOptions {
  peers: Map<NodeId, string>;
  /** Per-message traffic logs (debug level); off unless the log level is debug. */
  traceMessages: boolean;
  /** A sender of our cluster that is not in our configuration: our log may be stale (a node added while
   *  we were down, now leading). Called at most once per sender per few seconds; the runtime asks the
   *  members and, when they vouch for it, calls vouch(). */
  onUnknownSender?: (from: NodeId) => void;
  /** TLS: judges every incoming stream by its client certificate, and each message's `from`. */
  authenticator?: PeerAuthenticator;
  /** nodes[].peerDialOverrides: dial these members here instead of the address setPeers() gives. */
  dialOverrides?: ReadonlyMap<NodeId, string>;
}

export class PeerTransport implements PeerSender {
  private links = new Map<NodeId, PeerLink>();
  private readonly admission: PeerAdmission;
  private closed = false;
  /** Inbound Raft streams accepted so far (each one numbered: PeerLink.markAlive). */
  private inboundStreams = 0;
  private forwardedCallHandler: ForwardedCallHandler | null = null;
  /** The cluster level each peer announced on its latest message to us (BASE_LEVEL for a build before the
   *  gate, which announces none). */
  private readonly announcedLevels = new Map<NodeId, number>();

  constructor(private readonly opts: PeerTransportOptions) {
    this.admission = new PeerAdmission({
      selfId: opts.selfId,
      logger: opts.logger,
      authenticator: opts.authenticator,
      onUnknownSender: opts.onUnknownSender,
    });
    this.setPeers(opts.peers);
  }

  /** The peer addresses to dial: links to new ids open, links to ids no longer listed close, and a
   *  changed address gets a new link. */
  setPeers(advertised: Map<NodeId, string>): void {
    if (this.closed) return;
    const overrides = this.opts.dialOverrides;
    const peers = overrides?.size ? new Map([...advertised].map(([id, address]) => [id, overrides.get(id) ?? address])) : advertised;
    for (const [id, link] of this.links) {
      if (peers.get(id) !== link.address) {
        link.close();
        this.links.delete(id);
        this.announcedLevels.delete(id);
      }
    }
    for (const [id, address] of peers) {
      if (id !== this.opts.selfId && !this.links.has(id))
        this.links.set(
          id,
          new PeerLink(
            id,
            address,
            this.opts,
            () => this.admission.clusterId,
            () => this.inboundStreams,
            () => (this.announcedLevels.get(id) ?? BASE_LEVEL) >= LEVEL_PEER_BATCHES,
          ),
        );
    }
  }

  setIdentity(identity: PeerIdentity): void {
    this.admission.setIdentity(identity);
  }

  /** The leader we now follow (see PeerIdentity.leaderId). */
  setLeader(leaderId: NodeId | null): void {
    this.admission.setLeader(leaderId);
  }

  /** The members say `id` is one of them (our log has not caught up): hear it. */
  vouch(id: NodeId): void {
    this.admission.vouch(id);
  }

  /** New credentials (certificate reload): every peer link reconnects with them. */
  setCredentials(credentials: grpc.ChannelCredentials): void {
    for (const link of this.links.values()) link.connect(credentials);
  }

  /** How many streams the link to `peer` has opened: its first and every reconnect attempt (diagnostics). */
  streamsOpenedTo(peer: NodeId): number {
    return this.links.get(peer)?.streamsOpened ?? 0;
  }

  /** gRPC messages and the Raft messages in them written to `peer` so far (a batch is one gRPC message):
   *  diagnostics and tests. */
  writtenTo(peer: NodeId): { frames: number; messages: number } {
    const link = this.links.get(peer);
    return { frames: link?.framesWritten ?? 0, messages: link?.messagesWritten ?? 0 };
  }

  /** The cluster level `peer` announced on its latest message to us (1 for a build from before the gate,
   *  which announces nothing), or undefined when nothing was heard from it since this process started. */
  announcedLevel(peer: NodeId): number | undefined {
    return this.announcedLevels.get(peer);
  }

  /** An admitted message from `from`: its link is alive, and we know which level its build reads. Only
   *  members get here (admission), so the map stays as small as the membership. */
  private heard(from: NodeId, stream: number, level: number): void {
    this.links.get(from)?.markAlive(stream);
    this.announcedLevels.set(from, Math.max(BASE_LEVEL, level)); // none announced: a build before the gate
  }

  /** Each peer and whether its outbound stream is connected (metrics, quorum warnings). */
  peerStates(): Map<NodeId, boolean> {
    return new Map([...this.links].map(([id, link]) => [id, link.connected]));
  }

  send(messages: Message[]): void {
    for (const m of messages) {
      const link = this.links.get(m.to);
      if (link) link.enqueue(m);
      if (this.opts.traceMessages) this.opts.logger.debug({ nodeId: this.opts.selfId, to: m.to, type: m.type, term: m.term }, 'raft send');
    }
  }

  /** Where lock calls for the leader `to` go (null: not a peer we have a link to). */
  forward(to: NodeId): ForwardStream | null {
    return this.links.get(to)?.forwardStream() ?? null;
  }

  /** Who serves the lock calls followers forward to us (the runtime sets it once the client API exists). */
  setForwardedCallHandler(handler: ForwardedCallHandler): void {
    this.forwardedCallHandler = handler;
  }

  /** Server side: the Raft service handlers feeding decoded messages to `deliver`. */
  handlers(deliver: (m: Message) => void): RaftHandlers {
    const raft = {
      selfId: this.opts.selfId,
      admission: this.admission,
      deliver,
      heard: (from: NodeId, stream: number, level: number) => this.heard(from, stream, level),
    };
    const forward = { selfId: this.opts.selfId, admission: this.admission, handler: () => this.forwardedCallHandler };
    return {
      Forward: (call) => serveForwardStream(call, forward),
      Stream: (call, callback) => serveRaftStream(call, callback, ++this.inboundStreams, raft),
    };
  }

  close(): void {
    this.closed = true;
    for (const link of this.links.values()) link.close();
    this.links.clear();
  }
}
