// Client commands of the `leasehold` CLI: acquire, renew, release, get, session open/renew/close
// (status: cluster-commands.ts).
// Exit codes (SPEC): 0 done, 1 usage / INVALID_ARGUMENT, 2 the cluster could not answer, 3 refused,
// 4 permission denied — all through exit-codes.ts, which other commands reuse.
import type { Command } from 'commander';
import { EndpointPool, newRequestId } from '../client/rpc.js';
import { clientTlsCredentials, type ClientTlsOptions } from '../client/tls.js';
import type {
  AcquireResponse,
  CloseSessionResponse,
  GetResponse,
  ListedLock,
  ListResponse,
  OpenSessionResponse,
  ReleaseResponse,
  RenewResponse,
  RenewSessionResponse,
  RevokeResponse,
} from '../wire/lock.js';
import { checkEndpoints, parseHoldLimit, parseToken } from './args.js';
import { formatDuration, isoTime, parseDuration } from './duration.js';
import { EXIT, RefusedError, UsageError, exitCodeFor, reportError } from './exit-codes.js';
import { ReachWatch } from './reach.js';

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
    .option(
      '--cacert <file>',
      'CA certificate (PEM) to verify the nodes with; turns TLS on (env LEASEHOLD_CACERT)',
      env('LEASEHOLD_CACERT'),
    )
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
  return new EndpointPool({ endpoints: checkEndpoints(opts.endpoints), ...(tls ? { credentials: clientTlsCredentials(tls) } : {}) });
}

const say = (msg: string) => process.stderr.write(`leasehold: ${msg}\n`);

/** What a command's answer means: printed text, JSON, and whether it was a refusal (exit 3). */
interface Outcome {
  text: string;
  json: object;
  refused?: boolean;
}

type CliMethod = 'Acquire' | 'Renew' | 'Release' | 'Get' | 'OpenSession' | 'RenewSession' | 'CloseSession' | 'List' | 'Revoke';

/** Context a command's steps get: the pool, the overall deadline, and a call that knows when nothing is reachable. */
interface Ctx {
  pool: EndpointPool;
  deadline: number;
  call<Res>(method: CliMethod, request: object | ((attempt: number) => object)): Promise<Res>;
}

async function run(opts: CommonOpts, fn: (ctx: Ctx) => Promise<Outcome>): Promise<void> {
  let endpoints: string[] = [];
  let p: EndpointPool | null = null;
  try {
    p = pool(opts);
    endpoints = p.endpoints;
    const livePool = p;
    const watch = new ReachWatch(endpoints, say);
    const deadline = Date.now() + opts.timeout;
    const ctx: Ctx = {
      pool: livePool,
      deadline,
      call: async <Res>(method: CliMethod, request: object | ((attempt: number) => object)) => {
        try {
          return await livePool.call<Res>(method, request, deadline, watch.signal, {
            onRetry: (r) => watch.attemptFailed(r.endpoint, r.error.code, r.error.details),
          });
        } catch (err) {
          throw watch.unreachable ?? err;
        }
      },
    };
    const outcome = await fn(ctx);
    process.stdout.write((opts.json ? JSON.stringify(outcome.json, null, 2) : outcome.text) + '\n');
    process.exitCode = outcome.refused ? EXIT.REFUSED : EXIT.OK;
  } catch (err) {
    reportError(err, endpoints);
  } finally {
    p?.close();
  }
}

/** Best effort: who holds `key` now (for refusal messages); null when the read fails. */
async function peek(ctx: Ctx, key: string): Promise<GetResponse | null> {
  try {
    return await ctx.pool.call<GetResponse>('Get', { key }, Math.min(ctx.deadline, Date.now() + 1000), undefined, {
      retry: false,
      attemptTimeoutMs: 1000,
    });
  } catch {
    return null;
  }
}

function holderText(g: GetResponse): string {
  return `held by ${JSON.stringify(g.owner)} with token ${g.token} for another ${formatDuration(Number(g.ttl_ms))} (until ${isoTime(g.expires_at_ms)})`;
}

/** Why a renew or release with (owner, token) was refused, and what to do next. */
async function refusalText(ctx: Ctx, key: string, owner: string, token: string, reason: string): Promise<string> {
  const g = await peek(ctx, key);
  if (!g) return `refused (${reason}): the lock "${key}" is not held by ${JSON.stringify(owner)} with token ${token}`;
  // Tokens only grow per key: one above the last issued was never a token of this lock (a typo, another
  // key's token) — not a superseded one.
  const neverIssued = BigInt(token) > BigInt(g.last_token);
  if (neverIssued) {
    const now = g.held ? `it is ${holderText(g)}` : 'it is not held';
    return `refused (${reason}): token ${token} was never issued for lock "${key}" (the last token issued is ${g.last_token}); ${now}. Check --token and the key`;
  }
  if (!g.held) {
    return `refused (${reason}): lock "${key}" is not held (its lease ran out or it was released; last token ${g.last_token}). Acquire it again for a new token`;
  }
  if (g.owner === owner) {
    return (
      `refused (${reason}): lock "${key}" is held by ${JSON.stringify(owner)} with token ${g.token}, not ${token} — token ${token} is dead ` +
      `(a newer acquire by the same owner superseded it). Stop writing with it; use --token ${g.token} if that acquire is yours, or acquire again`
    );
  }
  return `refused (${reason}): lock "${key}" is ${holderText(g)}, not by ${JSON.stringify(owner)}. Acquire it (with --wait to queue) when it is free`;
}

/** While an acquire waits in line: who holds the lock and how long we have waited, on stderr. */
function queueProgress(ctx: Ctx, key: string, startedAt: number, firstMs = 1000, everyMs = 5000): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout;
  const tick = async () => {
    const g = await peek(ctx, key);
    if (stopped) return;
    const waited = formatDuration(Date.now() - startedAt);
    say(
      g?.held
        ? `waiting for lock "${key}": ${holderText(g)}; waited ${waited}`
        : `waiting for lock "${key}": queued behind other waiters; waited ${waited}`,
    );
    timer = setTimeout(() => void tick(), everyMs);
  };
  timer = setTimeout(() => void tick(), firstMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export function clientCommands(program: Command): void {
  withCommon(
    program
      .command('acquire <key>')
      .description('acquire a lock; prints the fencing token (exit code 3 when the lock is held by someone else)')
      .requiredOption('--owner <owner>', 'who holds the lock (1..256 bytes)')
      .option('--ttl <duration>', 'lease length, e.g. 10s or 500ms (not with --session)', (v) => parseDuration(v, '--ttl'))
      .option('--session <id>', 'hold it under this session (from `leasehold session open`): it lives as long as the session', (v) =>
        parseToken(v, '--session'),
      )
      .option('--wait <duration>', 'wait in line up to this long for the lock (FIFO)', (v) => parseDuration(v, '--wait'), 0)
      .option(
        '--lock-delay <duration>',
        'if this hold runs out (a release while it lives starts none), the key grants nobody for this long after',
        (v) => parseDuration(v, '--lock-delay'),
        0,
      )
      .option('--value <text>', "stored with the hold and shown by get (e.g. the holder's address)")
      .option(
        '--limit <n>',
        'a semaphore: up to n holders at once, each with its own token (every acquire of the key names the same n)',
        (v) => parseHoldLimit(v),
        1,
      )
      .option('--shared', 'a shared (read) hold: any number together, or one exclusive hold')
      .option('--request-id <id>', 'idempotency key; a retry with the same id returns the first outcome'),
  ).action(
    async (
      key: string,
      o: CommonOpts & {
        owner: string;
        ttl?: number;
        session?: string;
        wait: number;
        lockDelay: number;
        value?: string;
        limit: number;
        shared?: boolean;
        requestId?: string;
      },
    ) => {
      if ((o.ttl === undefined) === (o.session === undefined)) {
        reportError(
          new UsageError(
            'acquire: give exactly one of --ttl (a lease of its own) and --session (a hold that lives as long as the session)',
          ),
        );
        return;
      }
      if (o.shared === true && o.limit > 1) {
        reportError(new UsageError('acquire: --shared is for a key of shared and exclusive holds (limit 1), not with --limit'));
        return;
      }
      const startedAt = Date.now();
      const requestId = o.requestId ?? newRequestId();
      // The same request_id on every attempt; only the remaining wait shrinks.
      const request = () => ({
        key,
        owner: o.owner,
        ...(o.session !== undefined ? { ttl_ms: '0', session_id: o.session } : { ttl_ms: String(o.ttl) }),
        wait_ms: String(Math.max(0, o.wait - (Date.now() - startedAt))),
        request_id: requestId,
        ...(o.lockDelay > 0 ? { lock_delay_ms: String(o.lockDelay) } : {}),
        ...(o.value !== undefined ? { value: Buffer.from(o.value, 'utf8') } : {}),
        ...(o.limit > 1 ? { limit: o.limit } : {}),
        ...(o.shared === true ? { shared: true } : {}),
      });
      await run({ ...o, timeout: Math.max(o.timeout, o.wait + 5000) }, async (ctx) => {
        const before = await peek(ctx, key);
        const stopProgress = o.wait > 0 ? queueProgress(ctx, key, startedAt) : () => {};
        let r: AcquireResponse;
        try {
          r = await ctx.call<AcquireResponse>('Acquire', request);
        } finally {
          stopProgress();
        }
        const json = { ...r, key, expires_at: isoTime(r.expires_at_ms), waited_ms: Date.now() - startedAt };
        if (!r.acquired) {
          const delayLeftMs = Number(r.delay_ms_left ?? 0);
          const holder = r.holder_owner
            ? `is held by ${JSON.stringify(r.holder_owner)} for another ${formatDuration(Number(r.holder_ttl_ms))}`
            : delayLeftMs > 0
              ? `is in lock-delay for another ${formatDuration(delayLeftMs)} (its last holder's lease expired)`
              : 'was not granted: other waiters are queued ahead';
          const waited = o.wait > 0 ? ` (waited ${formatDuration(Date.now() - startedAt)})` : '';
          return { text: `not acquired: lock "${key}" ${holder}${waited}; retry later, or queue with --wait`, json, refused: true };
        }
        let text =
          o.session !== undefined
            ? `acquired ${key}: token ${r.token}, under session ${o.session} (lives as long as the session; now until ${isoTime(r.expires_at_ms)} unless it is renewed)`
            : `acquired ${key}: token ${r.token}, ttl ${formatDuration(Number(r.ttl_ms))} (expires ${isoTime(r.expires_at_ms)} unless renewed)`;
        if (before?.held && before.owner === o.owner && before.token !== r.token) {
          text += `\nnote: ${JSON.stringify(o.owner)} already held ${key} with token ${before.token}; that token is now dead (renew or release with it is refused) — use token ${r.token}`;
        }
        return { text, json };
      });
    },
  );

  withCommon(
    program
      .command('renew <key>')
      .description('extend a lease you hold (owner and token must match)')
      .requiredOption('--owner <owner>', 'the holder')
      .requiredOption('--token <token>', 'the fencing token from acquire', (v) => parseToken(v))
      .requiredOption('--ttl <duration>', 'new lease length from now, e.g. 10s', (v) => parseDuration(v, '--ttl'))
      .option('--request-id <id>', 'idempotency key'),
  ).action(async (key: string, o: CommonOpts & { owner: string; token: string; ttl: number; requestId?: string }) => {
    const request = { key, owner: o.owner, token: o.token, ttl_ms: String(o.ttl), request_id: o.requestId ?? newRequestId() };
    await run(o, async (ctx) => {
      const r = await ctx.call<RenewResponse>('Renew', request);
      const json = { ...r, key, expires_at: isoTime(r.expires_at_ms) };
      if (r.renewed) return { text: `renewed ${key}: ttl ${formatDuration(Number(r.ttl_ms))} (expires ${isoTime(r.expires_at_ms)})`, json };
      return { text: `not renewed: ${await refusalText(ctx, key, o.owner, o.token, r.reason)}`, json, refused: true };
    });
  });

  withCommon(
    program
      .command('release <key>')
      .description('release a lock you hold (owner and token must match)')
      .requiredOption('--owner <owner>', 'the holder')
      .requiredOption('--token <token>', 'the fencing token from acquire', (v) => parseToken(v))
      .option('--request-id <id>', 'idempotency key'),
  ).action(async (key: string, o: CommonOpts & { owner: string; token: string; requestId?: string }) => {
    const request = { key, owner: o.owner, token: o.token, request_id: o.requestId ?? newRequestId() };
    await run(o, async (ctx) => {
      const r = await ctx.call<ReleaseResponse>('Release', request);
      if (r.released) return { text: `released ${key}`, json: { ...r, key } };
      return { text: `not released: ${await refusalText(ctx, key, o.owner, o.token, r.reason)}`, json: { ...r, key }, refused: true };
    });
  });

  withCommon(program.command('get <key>').description('show who holds a lock (linearizable read)')).action(
    async (key: string, o: CommonOpts) => {
      await run(o, async (ctx) => {
        const r = await ctx.call<GetResponse>('Get', { key });
        const waiting = Number(r.waiters ?? 0) > 0 ? `; ${r.waiters} waiting` : '';
        const value = r.holders?.[0]?.value;
        const valueText = value !== undefined && value.length > 0 ? `; value ${JSON.stringify(Buffer.from(value).toString('utf8'))}` : '';
        const sessionId = r.holders?.[0]?.session_id ?? '0';
        const sessionText = sessionId !== '0' ? `; under session ${sessionId}` : '';
        const many = (r.holders ?? []).length > 1 || (r.limit ?? 1) > 1 || (r.holders ?? []).some((h) => h.shared);
        const text = !r.held
          ? `${key}: free (last token ${r.last_token}${waiting})`
          : many
            ? `${key}: ${r.holders.length} holder${r.holders.length === 1 ? '' : 's'}${(r.limit ?? 1) > 1 ? ` of a limit of ${r.limit}` : ''} (last token ${r.last_token}${waiting})\n` +
              r.holders
                .map(
                  (h) =>
                    `  ${h.owner}: token ${h.token}${h.shared ? ', shared' : ''}, ${formatDuration(Number(h.ttl_ms))} left${h.session_id !== '0' ? `, under session ${h.session_id}` : ''}`,
                )
                .join('\n')
            : `${key}: held by ${r.owner}, token ${r.token}, ${formatDuration(Number(r.ttl_ms))} left (expires ${isoTime(r.expires_at_ms)}; last token ${r.last_token}${waiting}${valueText}${sessionText})`;
        const holders = (r.holders ?? []).map((h) => ({ ...h, value: Buffer.from(h.value).toString('utf8') }));
        return { text, json: { ...r, holders, key, expires_at: isoTime(r.expires_at_ms) } };
      });
    },
  );

  withCommon(
    program
      .command('list [prefix]')
      .description('list the locks held or waited on under a prefix, in byte order (any node answers)')
      .option('--limit <n>', 'locks per page (1..1000)', '100')
      .option('--all', 'follow next_page_token to the end'),
  ).action(async (prefix: string | undefined, o: CommonOpts & { limit: string; all?: boolean }) => {
    await run(o, async (ctx) => {
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw new UsageError(`--limit must be an integer from 1 to 1000, got ${JSON.stringify(o.limit)}`);
      const locks: ListedLock[] = [];
      let token = '';
      let next = '';
      do {
        const page = await ctx.call<ListResponse>('List', { prefix: prefix ?? '', limit, page_token: token });
        locks.push(...page.locks);
        next = page.next_page_token;
        token = next;
      } while (o.all && next !== '');
      const lines = locks.map((l) => {
        const h = l.holders[0];
        const held = h
          ? `held by ${h.owner}, token ${h.token}, ${formatDuration(Number(h.ttl_ms))} left${h.session_id !== '0' ? `, session ${h.session_id}` : ''}`
          : 'free';
        return `${l.key}: ${held}${l.waiters > 0 ? `; ${l.waiters} waiting` : ''} (last token ${l.last_token})`;
      });
      if (next !== '') lines.push(`(more: --all, or the next page after ${JSON.stringify(next)})`);
      const json = {
        locks: locks.map((l) => ({ ...l, holders: l.holders.map((h) => ({ ...h, value: Buffer.from(h.value).toString('utf8') })) })),
        next_page_token: next,
      };
      return { text: lines.length > 0 ? lines.join('\n') : `no locks under ${JSON.stringify(prefix ?? '')}`, json };
    });
  });

  withCommon(
    program
      .command('revoke <key>')
      .description(
        "end a lock's hold as an operator (no lock-delay; the key goes to its line at once); under owner binding, only auth.admins",
      )
      .option('--token <token>', 'only the hold with this token (default: whatever hold the key has)')
      .option('--reason <text>', 'why, for the node log', '')
      .option(
        '--request-id <id>',
        'idempotency key (default: a new one, kept across the retries of this run): a retry with the same id answers the first outcome and ends no hold granted since',
      ),
  ).action(async (key: string, o: CommonOpts & { token?: string; reason: string; requestId?: string }) => {
    await run(o, async (ctx) => {
      const token = o.token === undefined ? '0' : parseToken(o.token);
      // One request id for every attempt of this command: the cluster answers a retry with the first outcome.
      const request = { key, token, reason: o.reason, request_id: o.requestId ?? newRequestId() };
      let r: RevokeResponse;
      try {
        r = await ctx.call<RevokeResponse>('Revoke', request);
      } catch (err) {
        // No answer: it may have applied. The same id again answers its outcome and ends nothing new.
        if (exitCodeFor(err) === EXIT.UNAVAILABLE)
          say(
            `the revoke's outcome is unknown; retry it with --request-id ${request.request_id} (a new id could end a hold granted since)`,
          );
        throw err;
      }
      const text =
        r.revoked.length > 0
          ? `revoked ${key}: token ${r.revoked.join(', ')} ended`
          : `nothing revoked: ${key} has ${o.token === undefined ? 'no hold' : `no hold with token ${o.token}`}`;
      return { text, json: { key, revoked: r.revoked, request_id: request.request_id }, refused: r.revoked.length === 0 };
    });
  });

  sessionCommands(program);
}

/** `leasehold session open|renew|close`: one lease for many holds (SPEC "Sessions"). */
function sessionCommands(program: Command): void {
  const session = program.command('session').description('open, renew or close a session: one lease for many holds (acquire --session)');
  withCommon(
    session
      .command('open')
      .description('open a session; prints its id (hold locks under it with acquire --session ID; renew it every ttl/3)')
      .requiredOption('--owner <owner>', 'owner of the session and of every hold under it')
      .requiredOption('--ttl <duration>', "the session's lease, e.g. 30s", (v) => parseDuration(v, '--ttl'))
      .option(
        '--lock-delay <duration>',
        'lock-delay of every hold of the session that sets none of its own',
        (v) => parseDuration(v, '--lock-delay'),
        0,
      )
      .option('--request-id <id>', 'idempotency key: a retry answers the same session while it is open'),
  ).action(async (o: CommonOpts & { owner: string; ttl: number; lockDelay: number; requestId?: string }) => {
    const request = {
      owner: o.owner,
      ttl_ms: String(o.ttl),
      lock_delay_ms: String(o.lockDelay),
      request_id: o.requestId ?? newRequestId(),
    };
    await run(o, async (ctx) => {
      const r = await ctx.call<OpenSessionResponse>('OpenSession', request);
      return {
        text: `opened session ${r.session_id}: ttl ${formatDuration(Number(r.ttl_ms))} (expires ${isoTime(r.expires_at_ms)} unless renewed)`,
        json: { ...r, expires_at: isoTime(r.expires_at_ms) },
      };
    });
  });
  withCommon(
    session
      .command('renew <id>')
      .description('renew a session for its ttl from now (exit code 3 when it already ended: open a new one)')
      .option('--owner <owner>', "checked against the session's owner"),
  ).action(async (id: string, o: CommonOpts & { owner?: string }) => {
    const sessionId = parseToken(id, 'session id');
    await run(o, async (ctx) => {
      const r = await ctx.call<RenewSessionResponse>('RenewSession', {
        session_id: sessionId,
        owner: o.owner ?? '',
        request_id: newRequestId(),
      });
      const json = { ...r, session_id: sessionId, expires_at: isoTime(r.expires_at_ms) };
      if (r.renewed)
        return {
          text: `renewed session ${sessionId}: ttl ${formatDuration(Number(r.ttl_ms))} (expires ${isoTime(r.expires_at_ms)})`,
          json,
        };
      return { text: `not renewed: session ${sessionId} ${sessionRefusal(r.reason)}`, json, refused: true };
    });
  });
  withCommon(
    session
      .command('close <id>')
      .description('close a session: every hold of it is released in one entry (no lock-delay while the session lives)')
      .option('--owner <owner>', "checked against the session's owner"),
  ).action(async (id: string, o: CommonOpts & { owner?: string }) => {
    const sessionId = parseToken(id, 'session id');
    await run(o, async (ctx) => {
      const r = await ctx.call<CloseSessionResponse>('CloseSession', {
        session_id: sessionId,
        owner: o.owner ?? '',
        request_id: newRequestId(),
      });
      const json = { ...r, session_id: sessionId };
      if (r.closed)
        return { text: `closed session ${sessionId}; released ${r.released.length === 0 ? 'nothing' : r.released.join(', ')}`, json };
      return { text: `not closed: session ${sessionId} ${sessionRefusal(r.reason)}`, json, refused: true };
    });
  });
}

function sessionRefusal(reason: string): string {
  if (reason === 'WRONG_OWNER') return 'belongs to another owner (WRONG_OWNER)';
  if (reason === 'EXPIRED') return 'ran out before this call was ordered (EXPIRED); open a new one';
  return 'is not open (NOT_HELD: closed, expired, or never opened); open a new one';
}
