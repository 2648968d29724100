// Reads a node's persisted lock state over the wire (Cluster/Snapshot, as `leasehold snapshot save` does) and
// reduces it to what replicas must agree on: the applied point and the digest of the state its records restore
// to (LockMachine.digest: the canonical snapshot's fingerprint). Used by the process tests that kill nodes.
import { clusterGrpcService, type SnapshotChunk } from '../../src/wire/cluster.js';
import { backupRecords, readBackup } from '../../src/state/backup.js';
import { restoreFromRecords } from '../../src/lock/store-records.js';
import type { LockMachine } from '../../src/lock/machine.js';
import * as grpc from '@grpc/grpc-js';

export interface StoreView {
  index: number;
  digest: string;
  holds: number;
  /** Key records (held keys and freed keys not yet forgotten) and the backup's size. */
  keys: number;
  bytes: number;
}

export async function storeView(endpoint: string, timeoutMs = 10_000): Promise<StoreView> {
  const client = clusterGrpcService.client(endpoint, grpc.credentials.createInsecure());
  try {
    const bytes = await new Promise<Buffer>((resolve, reject) => {
      const parts: Uint8Array[] = [];
      const stream = client.Snapshot({}, { deadline: new Date(Date.now() + timeoutMs) });
      stream.on('data', (c: SnapshotChunk) => parts.push(c.data));
      stream.on('error', reject);
      stream.on('end', () => resolve(Buffer.concat(parts)));
    });
    const backup = readBackup(bytes);
    const { machine } = restoreFromRecords(backupRecords(backup), {}) as { machine: LockMachine };
    return {
      index: backup.point.index,
      digest: machine.digest(),
      holds: machine.leaseCount,
      keys: [...backupRecords(backup).keys].length,
      bytes: bytes.length,
    };
  } finally {
    client.close();
  }
}
