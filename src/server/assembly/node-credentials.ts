// This node's TLS credentials in one place: what its client and peer ports serve, and what it dials other
// members with (peer streams, forwarded calls, first-boot and vouching questions). reload() re-reads the
// files (SIGHUP) and hands the new material to everything that dials.
import * as grpc from '@grpc/grpc-js';
import type { ClusterConfig, NodeConfig } from '../../config/types.js';
import { NodeServerCredentials, nodeChannelCredentials, readTlsMaterial, type TlsMaterial } from '../../transport/tls.js';

export class NodeCredentials {
  readonly client: grpc.ServerCredentials;
  /** Peers always present a certificate, so a separate peer listener requires one at the handshake. */
  readonly peer: grpc.ServerCredentials;
  private dialWith: grpc.ChannelCredentials;
  private readonly onReload: Array<(dial: grpc.ChannelCredentials) => void> = [];

  private material: TlsMaterial | null;

  constructor(
    private readonly config: ClusterConfig,
    private readonly self: NodeConfig,
  ) {
    const material = config.tls ? readTlsMaterial(config.tls, self.id) : null;
    this.material = material;
    this.client = material
      ? new NodeServerCredentials(material, config.tls!.clientAuth === 'require')
      : grpc.ServerCredentials.createInsecure();
    this.peer = material && self.peerAddress ? new NodeServerCredentials(material, true) : this.client;
    this.dialWith = this.freshDial();
  }

  get tls(): boolean {
    return this.material !== null;
  }

  /** The certificate, key and CA as last read (null without TLS): what the HTTP endpoint serves. */
  get tlsMaterial(): TlsMaterial | null {
    return this.material;
  }

  /** How this node dials other members now (TLS when configured). */
  get dial(): grpc.ChannelCredentials {
    return this.dialWith;
  }

  /** A new channel credentials object (each grpc client keeps its own). */
  freshDial(): grpc.ChannelCredentials {
    return this.material ? nodeChannelCredentials(this.material) : grpc.credentials.createInsecure();
  }

  /** Called with the new dial credentials after every reload. */
  whenReloaded(listener: (dial: grpc.ChannelCredentials) => void): void {
    this.onReload.push(listener);
  }

  /** Re-reads the certificate, key and CA; false when the node runs without TLS. */
  reload(): boolean {
    if (!this.config.tls) return false;
    const material = readTlsMaterial(this.config.tls, this.self.id);
    this.material = material;
    if (this.client instanceof NodeServerCredentials) this.client.reload(material);
    if (this.peer !== this.client && this.peer instanceof NodeServerCredentials) this.peer.reload(material);
    this.dialWith = this.freshDial();
    for (const listener of this.onReload) listener(this.freshDial());
    return true;
  }
}
