// TLS material of one node (SPEC "TLS"): the server credentials its listeners use, and the channel
// credentials it dials peers (and forwards to the leader) with, presenting its own certificate.
//
// The server always *asks* for a client certificate when TLS is on, whatever clientAuth says, because
// the peer service may share the client port and a peer proves who it is with its certificate; a
// client without one still connects unless clientAuth is `require` (then the handshake itself refuses a
// client with no certificate, or one not signed by `ca`). `request` and `none` differ only for owner
// binding, which needs `require` (config validation enforces it).
//
// reload() re-reads the files (SIGHUP): new connections use the new certificate at once; established
// ones keep theirs until they reconnect.
import { readFileSync } from 'node:fs';
import type { SecureContextOptions } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { TlsSettings } from '../config/types.js';

export interface TlsMaterial {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** Reads the PEM files, naming the config key of a file that cannot be read. `{id}` in a path is this
 *  node's id, so every node can read the same config file and still load a certificate of its own. */
export function readTlsMaterial(tls: TlsSettings, nodeId: string): TlsMaterial {
  const read = (key: 'ca' | 'cert' | 'key'): Buffer => {
    const path = tls[key].replaceAll('{id}', nodeId);
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`tls.${key}: cannot read ${path}: ${(err as Error).message}`);
    }
  };
  return { ca: read('ca'), cert: read('cert'), key: read('key') };
}

/** Server credentials whose certificate can be swapped while the server runs. */
export class NodeServerCredentials extends grpc.ServerCredentials {
  constructor(material: TlsMaterial, requireClientCertificate: boolean) {
    super({ requestCert: true, rejectUnauthorized: requireClientCertificate }, contextOptions(material));
  }

  reload(material: TlsMaterial): void {
    this.updateSecureContextOptions(contextOptions(material));
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return this === other;
  }
}

function contextOptions(m: TlsMaterial): SecureContextOptions {
  return { ca: m.ca, cert: m.cert, key: m.key };
}

/** Channel credentials presenting this node's certificate and trusting only the cluster CA. */
export function nodeChannelCredentials(m: TlsMaterial): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(m.ca, m.key, m.cert);
}
