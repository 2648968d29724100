// `leasehold watch <key>` / `leasehold watch --prefix P`: one line (or one JSON object) per change, as the
// cluster applies them, until Ctrl-C or --count events (SPEC "Watch"). Resumes across node failures by
// itself (client/watch.ts); exits 1 when no node keeps the history --after-index asks for.
import type { Command } from 'commander';
import { EndpointPool } from '../client/rpc.js';
import { clientTlsCredentials } from '../client/tls.js';
import { watchEvents, type LockEventInfo } from '../client/watch.js';
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
      let pool: EndpointPool | null = null;
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const afterIndex = o.afterIndex === undefined ? 0n : parseIndex(o.afterIndex, '--after-index');
        const count = o.count === undefined ? Infinity : Number(parseIndex(o.count, '--count'));
        if (count === 0) throw new UsageError('--count must be at least 1');
        const tls = tlsFromFlags(o);
        pool = new EndpointPool({ endpoints: checkEndpoints(o.endpoints), ...(tls ? { credentials: clientTlsCredentials(tls) } : {}) });
        let seen = 0;
        const events = watchEvents(pool, target, {
          prefix: o.prefix === true,
          afterIndex,
          includeRenewals: o.renewals === true,
          includeProgress: o.progress === true,
          signal: stop.signal,
          onReconnect: (r) => process.stderr.write(`leasehold: watch: ${r.endpoint} ended the stream (${r.details}); resuming\n`),
        });
        for await (const e of events) {
          process.stdout.write((o.json ? JSON.stringify(jsonOf(e)) : textOf(e)) + '\n');
          if (e.kind !== 'PROGRESS' && ++seen >= count) break;
        }
        process.exitCode = EXIT.OK;
      } catch (err) {
        reportError(err, pool?.endpoints ?? []);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        pool?.close();
      }
    });
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
  return { index: e.index.toString(), kind: e.kind, key: e.key, owner: e.owner, token: e.token.toString(), session_id: e.sessionId.toString(), value: Buffer.from(e.value).toString('utf8'), shared: e.shared };
}

