// `leasehold run --lock KEY --ttl 10s -- CMD ARGS...`: run a command while holding a lock.
//
// The child gets LEASEHOLD_KEY, LEASEHOLD_TOKEN (the fencing token, to pass along with its writes) and
// LEASEHOLD_OWNER. The moment the lock is LOST (a renew refused, or no renew confirmed before the local,
// conservative lease deadline) the child gets SIGTERM, and SIGKILL after --grace. Consul's `consul lock`
// took about 90 s to signal its child after losing the lock; this signals within one timer tick of LOST,
// and LOST comes no later than ttl after the last confirmed renew was sent.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { Command } from 'commander';
import { LockClient } from '../client/client.js';
import { LockNotAcquiredError, UnavailableError, type LockLostError } from '../client/errors.js';
import type { LockHandle } from '../client/handle.js';
import type { Leadership } from '../client/election.js';
import { campaign, electionKey } from '../client/election.js';
import type { ClientLogger } from '../client/logger.js';
import { checkEndpoints, parseHoldLimit } from './args.js';
import { DEFAULT_ENDPOINTS, tlsFromFlags, withTlsFlags, type TlsFlags } from './client-commands.js';
import { formatDuration, parseDuration } from './duration.js';
import { UnreachableError } from './exit-codes.js';
import { ReachWatch } from './reach.js';

/** Exit codes of `leasehold run` itself; any other code is the child's. */
export const RUN_EXIT = Object.freeze({
  /** The lock is held by someone else (after --wait, if given); the command did not run. */
  NOT_ACQUIRED: 75,
  /** No node of the cluster answered (no leader, no quorum, wrong --endpoints); the command did not run. */
  UNAVAILABLE: 69,
  /** The lock was lost while the command ran; it was sent SIGTERM (then SIGKILL after --grace). */
  LOST: 77,
  /** The command could not be started (not found / not executable). */
  SPAWN_FAILED: 127,
  /** Bad usage or an unexpected error. */
  ERROR: 1,
});

interface RunOptions extends TlsFlags {
  lock: string;
  /** `leasehold elect`: campaign for this election (the lock is election/<name>, under a session). */
  election?: { name: string; value?: string };
  ttl: number;
  wait: number;
  lockDelay: number;
  /** A job pool: at most this many copies hold the key (run) at once, across machines. */
  limit?: number;
  grace: number;
  endpoints: string;
  owner?: string;
  timeout: number;
  quiet?: boolean;
  json?: boolean;
}

/** Default lease of `run`: long enough to ride out a leader election, short enough that a crashed run frees
 *  the lock soon. Renewed every ttl/3 while the command runs. */
export const RUN_DEFAULT_TTL_MS = 15_000;

/** After LOST, one short release attempt: the lease may still be ours on the server (lost only by the local
 *  deadline), but a cluster that stopped answering will not answer now either. */
const RELEASE_AFTER_LOST_MS = 500;

export function runCommand(program: Command): void {
  withTlsFlags(program.command('run'))
    .description('acquire a lock, run a command while it is held, release it when the command exits')
    .argument('<command...>', 'the command and its arguments (put them after --)')
    .requiredOption('--lock <key>', 'the lock to hold while the command runs')
    .option('--ttl <duration>', 'lease length, renewed every ttl/3 (e.g. 10s)', (v) => parseDuration(v, '--ttl'), RUN_DEFAULT_TTL_MS)
    .option('--wait <duration>', 'queue up to this long for the lock (FIFO); 0 = give up at once', (v) => parseDuration(v, '--wait'), 0)
    .option(
      '--lock-delay <duration>',
      'if the hold runs out (a release while it lives starts none), the key grants nobody for this long after',
      (v) => parseDuration(v, '--lock-delay'),
      0,
    )
    .option(
      '--limit <n>',
      'a job pool: at most n copies run at once across machines (a semaphore; each holds its own token)',
      (v) => parseHoldLimit(v),
      1,
    )
    .option('--grace <duration>', 'after SIGTERM on lock loss, wait this long before SIGKILL', (v) => parseDuration(v, '--grace'), 5000)
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .option('--owner <owner>', 'owner name to hold the lock as (default: <host>:<pid>:<random>/1)')
    .option('--timeout <duration>', 'deadline of each call to the cluster, retries included', (v) => parseDuration(v, '--timeout'), 10_000)
    .option('--quiet', 'do not print what happens to the lock on stderr')
    .option('--json', "print what happens to the lock as JSON lines on stderr (stdout is the command's)")
    .addHelpText(
      'after',
      `
The command gets LEASEHOLD_KEY, LEASEHOLD_TOKEN (the fencing token: pass it with every write to the
protected resource, which must refuse tokens older than one it has seen) and LEASEHOLD_OWNER.

When the lock is lost (a renew is refused, or none is confirmed before the lease deadline, counted from when
the last renew was sent), the command gets SIGTERM at once, and SIGKILL after --grace.
SIGINT, SIGTERM and SIGHUP sent to leasehold run are passed on to the command.
While queued (--wait), who holds the lock and how long we have waited is printed on stderr.
--ttl defaults to ${formatDuration(RUN_DEFAULT_TTL_MS)}. With --json, each event (queued, acquired, lost, released, exit) is one
JSON line on stderr with an ISO time.

Exit status:
  the command's own status   the lock was held throughout (a command killed by signal N gives 128+N)
  ${RUN_EXIT.LOST}                         the lock was LOST while the command ran (it was sent SIGTERM)
  ${RUN_EXIT.NOT_ACQUIRED}                         the lock is held by someone else; the command did not run
  ${RUN_EXIT.UNAVAILABLE}                         the cluster did not answer; the command did not run
  ${RUN_EXIT.SPAWN_FAILED}                        the command could not be started
  ${RUN_EXIT.ERROR}                          bad usage or an unexpected error

Example:
  leasehold run --lock nightly-report --ttl 10s --wait 30s -- ./make-report.sh --date today
  leasehold run --lock render-pool --limit 4 --wait 10m -- ./render.sh   (at most 4 at once, anywhere)`,
    )
    .action(async (command: string[], o: RunOptions) => {
      process.exitCode = await runUnderLock(command, o);
    });
}

interface ElectOptions extends Omit<RunOptions, 'lock' | 'wait' | 'lockDelay' | 'election'> {
  value?: string;
}

export function electCommand(program: Command): void {
  withTlsFlags(program.command('elect'))
    .description('campaign for leadership of an election; run a command while leading (candidates lead in the order they came)')
    .argument('<name>', 'the election (its lock is election/<name>)')
    .argument('<command...>', 'the command and its arguments (put them after --)')
    .option('--value <value>', 'published with the leadership and shown by `leasehold observe` (an address, a job id)')
    .option(
      '--ttl <duration>',
      "the campaign session's lease: how soon another candidate leads after this process dies",
      (v) => parseDuration(v, '--ttl'),
      10_000,
    )
    .option(
      '--grace <duration>',
      'after SIGTERM on losing leadership, wait this long before SIGKILL',
      (v) => parseDuration(v, '--grace'),
      5000,
    )
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .option('--owner <owner>', 'candidate name (default: <host>:<pid>:<random>/s1)')
    .option('--timeout <duration>', 'deadline of each call to the cluster, retries included', (v) => parseDuration(v, '--timeout'), 10_000)
    .option('--quiet', 'do not print what happens on stderr')
    .option('--json', 'print what happens as JSON lines on stderr')
    .addHelpText(
      'after',
      `
Waits in line until it leads, then runs the command with LEASEHOLD_KEY (election/<name>), LEASEHOLD_TOKEN
(the leadership's fencing token) and LEASEHOLD_OWNER. Leadership lost: SIGTERM, SIGKILL after --grace,
exit ${RUN_EXIT.LOST}. The command exits: leasehold resigns (the next candidate leads at once) and exits with its status.
No node reachable: exit ${RUN_EXIT.UNAVAILABLE} within seconds, naming the endpoints tried (as run); while in line,
who leads is printed once a leader has answered.`,
    )
    .action(async (name: string, command: string[], o: ElectOptions) => {
      const election = { name, ...(o.value !== undefined ? { value: o.value } : {}) };
      process.exitCode = await runUnderLock(command, { ...o, lock: electionKey(name), wait: 0, lockDelay: 0, election });
    });
}

/**
 * The progress line of a wait for `lock` at a tick, or null: nothing to say yet. Nothing is said before a
 * leader has answered — `inLine` is false while a campaign's session is not open yet (nothing is in line),
 * and `read` is the tick's Get through a leader, null when it failed (every endpoint UNAVAILABLE proves
 * nothing about a place in line; saying "queued" then is how `elect` once reported a cluster it could not
 * reach). Then: who holds the key, or "queued".
 */
export function waitProgress(
  lock: string,
  inLine: boolean,
  read: { held: boolean; owner: string; token: bigint; ttlMs: number } | null,
  waitedMs: number,
): { text: string; fields: Record<string, unknown> } | null {
  if (!inLine || read === null) return null;
  const text = read.held
    ? `waiting for lock ${JSON.stringify(lock)}: held by ${JSON.stringify(read.owner)} with token ${read.token} for another ${formatDuration(read.ttlMs)}; waited ${formatDuration(waitedMs)}`
    : `waiting for lock ${JSON.stringify(lock)}: queued; waited ${formatDuration(waitedMs)}`;
  const holder = read.held ? { holder: read.owner, holder_token: read.token.toString(), holder_ttl_ms: read.ttlMs } : {};
  return { text, fields: { waited_ms: waitedMs, ...holder } };
}

async function runUnderLock(command: string[], o: RunOptions): Promise<number> {
  /** One event: a line for people, or a JSON line with --json; nothing with --quiet. */
  const report = (event: string, text: string, fields: Record<string, unknown> = {}) => {
    if (o.quiet) return;
    if (o.json) process.stderr.write(JSON.stringify({ event, at: new Date().toISOString(), key: o.lock, ...fields, message: text }) + '\n');
    else process.stderr.write(`leasehold ${o.election ? 'elect' : 'run'}: ${text}\n`);
  };
  const tls = tlsFromFlags(o);
  let endpoints: string[];
  try {
    endpoints = checkEndpoints(o.endpoints);
  } catch (err) {
    report('error', (err as Error).message);
    return RUN_EXIT.ERROR;
  }
  const watch = new ReachWatch(endpoints, (msg) => report('retrying', msg));
  // The client logs each failed attempt of the acquire; a connection failure on every endpoint ends it early.
  const logger: ClientLogger = {
    debug: (obj: object) => {
      const r = obj as { endpoint?: string; code?: number; error?: string };
      if (r.endpoint !== undefined && typeof r.code === 'number') watch.attemptFailed(r.endpoint, r.code, r.error ?? '');
    },
    info: () => {},
    warn: () => {},
    error: () => {},
  };
  const client = new LockClient({ endpoints, timeoutMs: o.timeout, logger, ...(tls ? { tls } : {}) });
  const startedAt = Date.now();
  // A campaign opens its session first: until a leader has answered that, nothing is in line.
  let sessionOpen = false;
  let progress: NodeJS.Timeout | null = null;
  if (o.wait > 0 || o.election) {
    const tick = async () => {
      const inLine = !o.election || sessionOpen;
      const read = inLine ? await client.get(o.lock, { timeoutMs: 1000 }).catch(() => null) : null;
      if (progress === null) return;
      const line = waitProgress(o.lock, inLine, read, Date.now() - startedAt);
      if (line === null) {
        progress = setTimeout(() => void tick(), 1000);
        return;
      }
      report('queued', line.text, line.fields);
      progress = setTimeout(() => void tick(), 5000);
    };
    progress = setTimeout(() => void tick(), 1000);
  }
  let lock: LockHandle;
  let leadership: Leadership | null = null;
  try {
    if (o.election) {
      // The client's own campaign, told when its session opened (see `sessionOpen`).
      const candidate = {
        session: async (opts: Parameters<LockClient['session']>[0]) => {
          const session = await client.session(opts);
          sessionOpen = true;
          return session;
        },
        get: (key: string, opts?: { signal?: AbortSignal }) => client.get(key, opts),
        watch: (key: string, opts: { afterIndex: bigint; signal?: AbortSignal }) => client.watch(key, opts),
      };
      leadership = await campaign(candidate, o.election.name, {
        ttlMs: o.ttl,
        signal: watch.signal,
        ...(o.owner ? { owner: o.owner } : {}),
        ...(o.election.value !== undefined ? { value: o.election.value } : {}),
      });
      lock = leadership.hold;
    } else {
      lock = await client.acquire(o.lock, {
        ttlMs: o.ttl,
        waitMs: o.wait,
        signal: watch.signal,
        ...(o.owner ? { owner: o.owner } : {}),
        ...(o.lockDelay > 0 ? { lockDelayMs: o.lockDelay } : {}),
        ...((o.limit ?? 1) > 1 ? { limit: o.limit } : {}),
      });
    }
  } catch (err) {
    client.close();
    if (err instanceof LockNotAcquiredError) {
      const who = err.holder
        ? `is held by ${JSON.stringify(err.holder)} for another ${formatDuration(err.holderTtlMs)}`
        : 'was not granted: other waiters are queued ahead';
      const waited = o.wait > 0 ? ` (waited ${formatDuration(Date.now() - startedAt)})` : '';
      report('not-acquired', `lock ${JSON.stringify(o.lock)} ${who}${waited}; the command did not run (queue for it with --wait)`, {
        holder: err.holder,
        holder_ttl_ms: err.holderTtlMs,
      });
      return RUN_EXIT.NOT_ACQUIRED;
    }
    report('unavailable', (err as Error).message);
    if (err instanceof UnavailableError || err instanceof UnreachableError) return RUN_EXIT.UNAVAILABLE;
    return RUN_EXIT.ERROR;
  } finally {
    if (progress) clearTimeout(progress);
    progress = null;
  }
  const what = o.election ? `leadership of election ${JSON.stringify(o.election.name)}` : `lock ${JSON.stringify(o.lock)}`;
  report(
    'acquired',
    `acquired ${what} with token ${lock.token} (ttl ${formatDuration(o.ttl)}, renewed every ${formatDuration(leadership?.session.renewIntervalMs ?? lock.renewIntervalMs)})`,
    {
      token: lock.token.toString(),
      owner: lock.owner,
      ttl_ms: o.ttl,
    },
  );

  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, {
    stdio: 'inherit',
    env: { ...process.env, LEASEHOLD_KEY: o.lock, LEASEHOLD_TOKEN: lock.token.toString(), LEASEHOLD_OWNER: lock.owner },
  });

  let lost: LockLostError | null = null;
  let killTimer: NodeJS.Timeout | null = null;
  const onLost = (err: LockLostError) => {
    lost = err;
    if (child.exitCode === null && child.signalCode === null) {
      // The time in the line below lets a supervisor (or a test) measure loss-to-signal latency: take it
      // BEFORE the signal, or the child may see SIGTERM before the moment we report as the loss.
      const lostAt = new Date();
      child.kill('SIGTERM');
      report(
        'lost',
        `LOST at ${lostAt.toISOString()}: ${err.message}; sent SIGTERM to pid ${child.pid}, SIGKILL in ${formatDuration(o.grace)}`,
        { reason: err.reason, pid: child.pid },
      );
      killTimer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) {
          report('killed', `pid ${child.pid} still running after ${formatDuration(o.grace)}; sending SIGKILL`, { pid: child.pid });
          child.kill('SIGKILL');
        }
      }, o.grace);
    }
  };
  lock.on('lost', onLost);
  // Lost before the listener was attached (a very long spawn)? Act now.
  if (lock.state === 'LOST') onLost(lock.lostReason!);

  const forward = (signal: NodeJS.Signals) => () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const forwarded = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((s) => [s, forward(s)] as const);
  for (const [s, h] of forwarded) process.on(s, h);

  const outcome = await waitForExit(child);
  for (const [s, h] of forwarded) process.off(s, h);
  if (killTimer) clearTimeout(killTimer);

  // Release even when LOST: if the server still has our lease (lost only by the local deadline) this frees
  // the key at once instead of after the ttl; it never touches a newer holder's lock. After LOST it is one
  // short best-effort attempt: a cluster that stopped answering renewals will not answer a release now.
  const releaseMs = lost ? RELEASE_AFTER_LOST_MS : Math.min(o.timeout, o.ttl, 5000);
  try {
    if (leadership) {
      // Resigning closes the campaign's session: the hold goes, and the next candidate leads, in one entry.
      await Promise.race([leadership.resign(), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer')), releaseMs))]);
      report('released', `resigned ${what}`, { outcome: 'RESIGNED' });
    } else {
      const r = await lock.release({ timeoutMs: releaseMs });
      report('released', `released lock ${JSON.stringify(o.lock)} (${r.outcome})`, { outcome: r.outcome });
    }
  } catch (err) {
    report(
      'release-failed',
      `could not release lock ${JSON.stringify(o.lock)} within ${formatDuration(releaseMs)}: ${(err as Error).message}`,
    );
  }
  client.close();

  let code: number;
  if ('spawnError' in outcome) {
    report('spawn-failed', `cannot run ${JSON.stringify(file)}: ${outcome.spawnError.message}`);
    code = RUN_EXIT.SPAWN_FAILED;
  } else if (lost) code = RUN_EXIT.LOST;
  else if (outcome.signal) code = 128 + (osConstants.signals[outcome.signal] ?? 0);
  else code = outcome.code ?? RUN_EXIT.ERROR;
  if (o.json) report('exit', `exit ${code}`, { code });
  return code;
}

function waitForExit(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null } | { spawnError: Error }> {
  return new Promise((resolve) => {
    child.once('error', (err) => resolve({ spawnError: err }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}
