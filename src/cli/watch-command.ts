// `leasehold watch <key>` / `leasehold watch --prefix P`: one line (or one JSON object) per change, as the
// cluster applies them, until Ctrl-C or --count events (SPEC "Watch"). Resumes across node failures by
// itself (client/watch.ts); exits 1 when no node keeps the history --after-index asks for.
import type { Command } from 'commander';
import type { LockEventInfo } from '../client/watch.js';
import { LockClient } from '../client/client.js';
import { checkEndpoints } from './args.js';
import { DEFAULT_ENDPOINTS, tlsFromFlags, withTlsFlags, type TlsFlags } from './client-commands.js';
import { EXIT, UsageError, reportError } from './exit-codes.js';

interface WatchOpts extends TlsFlags {
  endpoints: string;
  prefix?: boolean;
  afterIndex?: string;
  renewals?: boolean;
  progress?: boolean;
  count?: string;
  json?: boolean;
}

export function watchCommand(program: Command): void {
  withTlsFlags(
    program
      .command('watch <target>')
      .description('print every change to a lock (or, with --prefix, to every lock under a prefix) as it happens, until Ctrl-C')
      .option('--prefix', 'watch every key starting with <target>')
      .option('--after-index <index>', 'start after this log index (the index of a `get --json`, or of the last event seen) instead of now')
      .option('--renewals', 'also print RENEWED events')
      .option('--progress', 'also print PROGRESS events (the index the watch has caught up to)')
      .option('--count <n>', 'exit 0 after this many events')
      .option('--json', 'one JSON object per line'),
  )
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .action(async (target: string, o: WatchOpts) => {
      await untilStopped(o, async (client, signal) => {
        const afterIndex = o.afterIndex === undefined ? 0n : parseIndex(o.afterIndex, '--after-index');
        const count = parseCount(o.count);
        let seen = 0;
        const events = client.watch(target, {
          prefix: o.prefix === true,
          afterIndex,
          includeRenewals: o.renewals === true,
          includeProgress: o.progress === true,
          signal,
          onReconnect: (r) => process.stderr.write(`leasehold: watch: ${r.endpoint} ended the stream (${r.details}); resuming\n`),
        });
        for await (const e of events) {
          process.stdout.write((o.json ? JSON.stringify(jsonOf(e)) : textOf(e)) + '\n');
          if (e.kind !== 'PROGRESS' && ++seen >= count) break;
        }
      });
    });
}

/** Runs a long-lived command with a client until it returns or Ctrl-C / SIGTERM (then exit 0). */
async function untilStopped(
  o: TlsFlags & { endpoints: string },
  fn: (client: LockClient, signal: AbortSignal) => Promise<void>,
): Promise<void> {
  let client: LockClient | null = null;
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const tls = tlsFromFlags(o);
    client = new LockClient({ endpoints: checkEndpoints(o.endpoints), ...(tls ? { tls } : {}) });
    await fn(client, stop.signal);
    process.exitCode = EXIT.OK;
  } catch (err) {
    reportError(err, client?.endpoints ?? []);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    client?.close();
  }
}

function parseCount(v: string | undefined): number {
  if (v === undefined) return Infinity;
  const n = Number(parseIndex(v, '--count'));
  if (n === 0) throw new UsageError('--count must be at least 1');
  return n;
}

function parseIndex(v: string, flag: string): bigint {
  if (!/^\d{1,20}$/.test(v)) throw new UsageError(`${flag} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return BigInt(v);
}

function textOf(e: LockEventInfo): string {
  if (e.kind === 'PROGRESS') return `${e.index} PROGRESS`;
  const token = e.token > 0n ? ` token ${e.token}` : '';
  const session = e.sessionId > 0n ? ` session ${e.sessionId}` : '';
  const value = e.value.length > 0 ? ` value ${JSON.stringify(Buffer.from(e.value).toString('utf8'))}` : '';
  return `${e.index} ${e.kind} ${e.key} by ${JSON.stringify(e.owner)}${token}${session}${value}`;
}

function jsonOf(e: LockEventInfo): object {
  return {
    index: e.index.toString(),
    kind: e.kind,
    key: e.key,
    owner: e.owner,
    token: e.token.toString(),
    session_id: e.sessionId.toString(),
    value: Buffer.from(e.value).toString('utf8'),
    shared: e.shared,
  };
}

interface ObserveOpts extends TlsFlags {
  endpoints: string;
  count?: string;
  json?: boolean;
}

/** `leasehold observe <name>`: one line per leader of an election, the current one first (SPEC "Election"). */
export function observeCommand(program: Command): void {
  withTlsFlags(
    program
      .command('observe <name>')
      .description('print the leader of an election and every new one, once each, in token order, until Ctrl-C')
      .option('--count <n>', 'exit 0 after this many leaders')
      .option('--json', 'one JSON object per line'),
  )
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .action(async (name: string, o: ObserveOpts) => {
      await untilStopped(o, async (client, signal) => {
        const count = parseCount(o.count);
        let seen = 0;
        for await (const l of client.observe(name, { signal })) {
          const value = Buffer.from(l.value).toString('utf8');
          process.stdout.write(
            (o.json
              ? JSON.stringify({ election: name, owner: l.owner, token: l.token.toString(), value })
              : `${name}: led by ${JSON.stringify(l.owner)} with token ${l.token}${value ? ` value ${JSON.stringify(value)}` : ''}`) + '\n',
          );
          if (++seen >= count) break;
        }
      });
    });
}
