// Client commands of the `leasehold` CLI: acquire, renew, release, get (status: cluster-commands.ts).
import type { Command } from 'commander';
import { EndpointPool, newRequestId, parseEndpoints, RpcError } from '../client/rpc.js';
import { clientTlsCredentials, type ClientTlsOptions } from '../client/tls.js';
import type { AcquireResponse, GetResponse, ReleaseResponse, RenewResponse } from '../transport/proto.js';
import { parseDuration } from './duration.js';

/** --endpoints default of every client command (and `run`). */
export const DEFAULT_ENDPOINTS = process.env['LEASEHOLD_ENDPOINTS'] ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';

export interface TlsFlags {
  cacert?: string;
  cert?: string;
  key?: string;
}

interface CommonOpts extends TlsFlags {
  endpoints: string;
  json?: boolean;
  timeout: number;
}

/** --cacert/--cert/--key (env LEASEHOLD_CACERT/_CERT/_KEY) on a command: TLS to the cluster. */
export function withTlsFlags(cmd: Command): Command {
  const env = (name: string) => process.env[name] || undefined;
  return cmd
    .option('--cacert <file>', 'CA certificate (PEM) to verify the nodes with; turns TLS on (env LEASEHOLD_CACERT)', env('LEASEHOLD_CACERT'))
    .option('--cert <file>', 'client certificate (PEM) for mTLS and owner binding (env LEASEHOLD_CERT)', env('LEASEHOLD_CERT'))
    .option('--key <file>', 'private key (PEM) of --cert (env LEASEHOLD_KEY)', env('LEASEHOLD_KEY'));
}

/** The client TLS options the flags ask for, or undefined for plaintext. */
export function tlsFromFlags(o: TlsFlags): ClientTlsOptions | undefined {
  if (o.cacert === undefined && o.cert === undefined && o.key === undefined) return undefined;
  return { ...(o.cacert ? { ca: o.cacert } : {}), ...(o.cert ? { cert: o.cert } : {}), ...(o.key ? { key: o.key } : {}) };
}

function withCommon(cmd: Command): Command {
  return withTlsFlags(cmd)
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .option('--json', 'print the response as JSON')
    .option('--timeout <duration>', 'overall deadline, retries included (e.g. 5s)', (v) => parseDuration(v, '--timeout'), 10_000);
}

function pool(opts: CommonOpts): EndpointPool {
  const tls = tlsFromFlags(opts);
  return new EndpointPool({ endpoints: parseEndpoints(opts.endpoints), ...(tls ? { credentials: clientTlsCredentials(tls) } : {}) });
}

async function run<T>(opts: CommonOpts, fn: (p: EndpointPool, deadline: number) => Promise<T>, print: (r: T) => string, exitCodeOf: (r: T) => number = () => 0): Promise<void> {
  const p = pool(opts);
  try {
    const result = await fn(p, Date.now() + opts.timeout);
    process.stdout.write((opts.json ? JSON.stringify(result, null, 2) : print(result)) + '\n');
    process.exitCode = exitCodeOf(result);
  } catch (err) {
    if (err instanceof RpcError) {
      process.stderr.write(`leasehold: ${err.message}\n`);
      process.exitCode = 2;
    } else throw err;
  } finally {
    p.close();
  }
}

export function clientCommands(program: Command): void {
  withCommon(
    program
      .command('acquire <key>')
      .description('acquire a lock; prints the fencing token (exit code 3 when the lock is held by someone else)')
      .requiredOption('--owner <owner>', 'who holds the lock (1..256 bytes)')
      .requiredOption('--ttl <duration>', 'lease length, e.g. 5000 or 10s', (v) => parseDuration(v, '--ttl'))
      .option('--wait <duration>', 'wait in line up to this long for the lock (FIFO)', (v) => parseDuration(v, '--wait'), 0)
      .option('--request-id <id>', 'idempotency key; a retry with the same id returns the first outcome'),
  ).action(async (key: string, o: CommonOpts & { owner: string; ttl: number; wait: number; requestId?: string }) => {
    const request = { key, owner: o.owner, ttl_ms: String(o.ttl), wait_ms: String(o.wait), request_id: o.requestId ?? newRequestId() };
    await run(
      { ...o, timeout: Math.max(o.timeout, o.wait + 5000) },
      (p, deadline) => p.call<AcquireResponse>('Acquire', request, deadline),
      (r) => (r.acquired ? `acquired ${key}: token ${r.token}, ttl ${r.ttl_ms} ms` : `not acquired: ${key} is held by ${r.holder_owner} for another ${r.holder_ttl_ms} ms`),
      (r) => (r.acquired ? 0 : 3),
    );
  });

  withCommon(
    program
      .command('renew <key>')
      .description('extend a lease you hold (owner and token must match)')
      .requiredOption('--owner <owner>', 'the holder')
      .requiredOption('--token <token>', 'the fencing token from acquire')
      .requiredOption('--ttl <duration>', 'new lease length from now', (v) => parseDuration(v, '--ttl'))
      .option('--request-id <id>', 'idempotency key'),
  ).action(async (key: string, o: CommonOpts & { owner: string; token: string; ttl: number; requestId?: string }) => {
    const request = { key, owner: o.owner, token: o.token, ttl_ms: String(o.ttl), request_id: o.requestId ?? newRequestId() };
    await run(o, (p, d) => p.call<RenewResponse>('Renew', request, d), (r) => (r.renewed ? `renewed ${key}: ttl ${r.ttl_ms} ms` : `not renewed: ${r.reason}`), (r) => (r.renewed ? 0 : 3));
  });

  withCommon(
    program
      .command('release <key>')
      .description('release a lock you hold (owner and token must match)')
      .requiredOption('--owner <owner>', 'the holder')
      .requiredOption('--token <token>', 'the fencing token from acquire')
      .option('--request-id <id>', 'idempotency key'),
  ).action(async (key: string, o: CommonOpts & { owner: string; token: string; requestId?: string }) => {
    const request = { key, owner: o.owner, token: o.token, request_id: o.requestId ?? newRequestId() };
    await run(o, (p, d) => p.call<ReleaseResponse>('Release', request, d), (r) => (r.released ? `released ${key}` : `not released: ${r.reason}`), (r) => (r.released ? 0 : 3));
  });

  withCommon(program.command('get <key>').description('show who holds a lock (linearizable read)')).action(async (key: string, o: CommonOpts) => {
    await run(
      o,
      (p, d) => p.call<GetResponse>('Get', { key }, d),
      (r) => (r.held ? `${key}: held by ${r.owner}, token ${r.token}, ${r.ttl_ms} ms left (last token ${r.last_token})` : `${key}: free (last token ${r.last_token})`),
    );
  });
}
