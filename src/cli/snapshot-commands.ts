// `leasehold snapshot save|status|restore`: online backups of the applied state (src/state/backup.ts).
//   save FILE      streams a consistent backup from a live node (the first endpoint that answers) into FILE
//                  (written aside, its checksum and structure checked, then renamed into place)
//   status FILE    checks a backup, restores it in memory and prints what it holds
//   restore FILE   builds a node's data dir from a backup for a new cluster with the same ids and addresses
// Exit codes as every client command (exit-codes.ts): 0 done; 1 usage, a damaged file, a data dir that is not
// empty, a backup of another cluster; 2 no node could answer; 3 the node holds no state yet.
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { clientTlsCredentials } from '../client/tls.js';
import { restoreFromRecords, tallyRecords, type RecordTally } from '../lock/store-records.js';
import type { LockMachine } from '../lock/machine.js';
import { clusterIdFor } from '../server/assembly/identity.js';
import { initialMembers } from '../config/initial-members.js';
import { openAppliedStore } from '../server/assembly/node-storage.js';
import { backupPieces, backupRecords, readBackup, type Backup } from '../state/backup.js';
import { clusterGrpcService, type SnapshotChunk } from '../wire/cluster.js';
import { checkEndpoints } from './args.js';
import { DEFAULT_ENDPOINTS, tlsFromFlags, withTlsFlags, type TlsFlags } from './client-commands.js';
import { parseDuration } from './duration.js';
import { EXIT, UnreachableError, UsageError, exitCodeForStatus } from './exit-codes.js';

interface SaveOpts extends TlsFlags {
  endpoints: string;
  json?: boolean;
  timeout: number;
  pace?: number;
}

/** --pace: a whole percent of the node's time, 1..100 (SnapshotRequest.pace_percent). */
function parsePace(value: string): number {
  const percent = Number(value);
  if (!/^[0-9]+$/.test(value) || percent < 1 || percent > 100)
    throw new UsageError(`--pace: give a whole percent from 1 to 100 (got ${JSON.stringify(value)})`);
  return percent;
}

/** What `status` and `restore` print: the backup restored whole, so a file that does not restore fails here. */
function describe(backup: Backup): Record<string, unknown> {
  const records = backupRecords(backup);
  const { machine } = restoreFromRecords(records, {}) as { machine: LockMachine };
  let keys = 0;
  for (const _ of records.keys) keys++;
  return factsOf(backup, { keys, holds: machine.leaseCount, sessions: machine.sessionCount });
}

/** What `save` prints: the same facts counted from the records (tallyRecords), with the checksum and the file's
 *  structure checked (readBackup). A save often runs beside a serving cluster; restoring a million-lock state
 *  to count it there took 5-6 s of CPU (2.5 s and 3 s of collection) after the stream, unpaced, on the
 *  cluster's cores. `status` restores it whole. */
function tally(backup: Backup): Record<string, unknown> {
  return factsOf(backup, tallyRecords(backupRecords(backup)));
}

function factsOf(backup: Backup, counts: RecordTally): Record<string, unknown> {
  return {
    index: backup.point.index,
    term: backup.point.term,
    cluster_id: backup.clusterId,
    members: [...backup.point.conf.voters, ...backup.point.conf.learners],
    keys: counts.keys,
    holds: counts.holds,
    sessions: counts.sessions,
    size_bytes: backup.sizeBytes,
    sha256: backup.sha256,
  };
}

function print(o: { json?: boolean }, what: string, facts: Record<string, unknown>): void {
  if (o.json) process.stdout.write(JSON.stringify({ ...facts, done: what }, null, 2) + '\n');
  else
    process.stdout.write(
      `${what}: index ${String(facts['index'])}, term ${String(facts['term'])}, cluster ${String(facts['cluster_id'])}; ` +
        `${String(facts['keys'])} keys, ${String(facts['holds'])} holds, ${String(facts['sessions'])} sessions; ` +
        `${String(facts['size_bytes'])} bytes, sha256 ${String(facts['sha256'])}\n`,
    );
}

async function readChecked(file: string): Promise<Backup> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return readBackup(bytes);
  } catch (err) {
    throw new UsageError(`${file}: ${(err as Error).message}`);
  }
}

/** Streams the backup of one endpoint into `part`, each chunk written as it comes (the file is never one
 *  buffer in memory: 80 MB at a million locks, and its copy was half a second of the CLI's CPU); resolves
 *  with its size once the file is flushed. */
function saveFrom(endpoint: string, creds: grpc.ChannelCredentials, deadline: number, part: string, pacePercent: number): Promise<number> {
  const client = clusterGrpcService.client(endpoint, creds);
  return new Promise<number>((done, failed) => {
    const out = createWriteStream(part);
    let size = 0;
    let failure: Error | null = null;
    const fail = (err: Error) => {
      failure ??= err;
      out.destroy();
      failed(failure);
    };
    out.on('error', (err) => {
      stream.cancel();
      fail(err);
    });
    const stream = client.Snapshot({ pace_percent: pacePercent }, { deadline: new Date(deadline) });
    stream.on('data', (chunk: SnapshotChunk) => {
      size += chunk.data.length;
      // The disk is slower than the node's stream: the stream waits for it rather than the CLI buffering.
      if (!out.write(chunk.data)) {
        stream.pause();
        out.once('drain', () => stream.resume());
      }
    });
    stream.on('error', (err: grpc.ServiceError) => fail(err));
    stream.on('end', () => {
      if (failure !== null) return;
      out.once('finish', () => done(size));
      out.end();
    });
  }).finally(() => client.close());
}

export function snapshotCommands(program: Command): void {
  const snapshot = program.command('snapshot').description('online backups of the lock state: save, status, restore');

  withTlsFlags(snapshot.command('save <file>'))
    .description('stream a consistent backup of a live node into FILE (index, term, cluster id and a checksum inside)')
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .option('--json', 'print what was saved as JSON')
    .option('--timeout <duration>', 'overall deadline (e.g. 5m)', (v) => parseDuration(v, '--timeout'), 600_000)
    .option(
      '--pace <percent>',
      "share of the node's time the backup may take, 1-100 (default: the node's, 25; 100 = as fast as it can)",
      parsePace,
    )
    .action(async (file: string, o: SaveOpts) => {
      const endpoints = checkEndpoints(o.endpoints);
      const tls = tlsFromFlags(o);
      const creds = tls ? clientTlsCredentials(tls) : grpc.credentials.createInsecure();
      const target = resolve(file);
      const part = `${target}.part`;
      const deadline = Date.now() + o.timeout;
      let lastError: grpc.ServiceError | null = null;
      for (const endpoint of endpoints) {
        try {
          await saveFrom(endpoint, creds, deadline, part, o.pace ?? 0);
        } catch (err) {
          await rm(part, { force: true });
          lastError = err as grpc.ServiceError;
          if (lastError.code === grpc.status.UNAVAILABLE || lastError.code === grpc.status.DEADLINE_EXCEEDED) continue;
          process.stderr.write(`leasehold: ${endpoint}: ${lastError.details ?? lastError.message}\n`);
          process.exitCode = exitCodeForStatus(lastError.code);
          return;
        }
        const backup = await readChecked(part); // the checksum, end to end, before it takes FILE's name
        await rename(part, target);
        print(o, `saved ${target} from ${endpoint}`, tally(backup));
        process.exitCode = EXIT.OK;
        return;
      }
      throw new UnreachableError(endpoints, lastError?.details ?? 'no endpoint answered');
    });

  snapshot
    .command('status <file>')
    .description('check a backup and print its index, term, keys, holds, sessions, size and checksum')
    .option('--json', 'print it as JSON')
    .action(async (file: string, o: { json?: boolean }) => {
      print(o, file, describe(await readChecked(file)));
      process.exitCode = EXIT.OK;
    });

  snapshot
    .command('restore <file>')
    .description("build node ID's data dir from a backup, for a new cluster whose config has the backup's ids and addresses")
    .requiredOption('--config <path>', 'the new cluster file (the same node ids and addresses as the backed-up cluster)')
    .requiredOption('--id <id>', 'the node whose data dir to build')
    .option('--data-dir <dir>', "this node's data directory, instead of its dataDir in the config")
    .option('--json', 'print what was restored as JSON')
    .action(async (file: string, o: { config: string; id: string; dataDir?: string; json?: boolean }) => {
      const config = loadConfig(o.config);
      const node = config.nodes.find((n) => n.id === o.id);
      if (node === undefined)
        throw new UsageError(`--id ${o.id}: no such node in ${o.config} (nodes: ${config.nodes.map((n) => n.id).join(', ')})`);
      const dataDir = o.dataDir ? resolve(o.dataDir) : node.dataDir;
      const backup = await readChecked(file);
      const facts = describe(backup); // reads the whole state: a backup that does not restore is refused here
      const expected = clusterIdFor(initialMembers(config.nodes));
      if (backup.clusterId !== expected)
        throw new UsageError(
          `${file} is a backup of cluster ${backup.clusterId} (members ${String(facts['members'])}); ${o.config} describes cluster ${expected}: ` +
            'restore into a cluster file with the same node ids and addresses',
        );
      const existing = await readdir(dataDir).catch(() => [] as string[]);
      if (existing.length > 0) throw new UsageError(`dataDir ${dataDir} is not empty: restore only into a new, empty data dir`);
      await mkdir(dataDir, { recursive: true });
      const store = await openAppliedStore(dataDir, o.id);
      try {
        await store.replace(backupPieces(backup), backup.point);
      } finally {
        await store.close();
      }
      print(o, `restored ${dataDir} for ${o.id}`, facts);
      process.exitCode = EXIT.OK;
    });
}
