// Client TLS options (SPEC "TLS"): `tls: { ca, cert, key }`, each PEM contents or a path to a PEM file.
// `ca` alone: verify the server; with `cert` and `key`: also present a client certificate (mTLS).
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';

export interface ClientTlsOptions {
  /** CA certificate(s) that signed the servers' certificates (PEM or path). Default: the system roots. */
  ca?: string | Buffer;
  /** This client's certificate (PEM or path), for clientAuth request/require and owner binding. */
  cert?: string | Buffer;
  /** Its private key (PEM or path). */
  key?: string | Buffer;
}

function pem(field: string, value: string | Buffer | undefined): Buffer | null {
  if (value === undefined || value === '') return null;
  if (Buffer.isBuffer(value)) return value;
  if (value.includes('-----BEGIN')) return Buffer.from(value);
  try {
    return readFileSync(value);
  } catch (err) {
    throw new Error(`tls.${field}: not PEM contents, and cannot read it as a file: ${(err as Error).message}`);
  }
}

export function clientTlsCredentials(tls: ClientTlsOptions): grpc.ChannelCredentials {
  const ca = pem('ca', tls.ca);
  const cert = pem('cert', tls.cert);
  const key = pem('key', tls.key);
  if ((cert === null) !== (key === null)) throw new Error('tls: give both cert and key (or neither)');
  return grpc.credentials.createSsl(ca, key, cert);
}
