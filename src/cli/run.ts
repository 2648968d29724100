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
import { DEFAULT_ENDPOINTS, tlsFromFlags, withTlsFlags, type TlsFlags } from './client-commands.js';
import { parseDuration } from './duration.js';

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
  ttl: number;
  wait: number;
  grace: number;
  endpoints: string;
  owner?: string;
  timeout: number;
  quiet?: boolean;
}

export function runCommand(program: Command): void {
  withTlsFlags(program
    .command('run'))
    .description('acquire a lock, run a command while it is held, release it when the command exits')
    .argument('<command...>', 'the command and its arguments (put them after --)')
    .requiredOption('--lock <key>', 'the lock to hold while the command runs')
    .requiredOption('--ttl <duration>', 'lease length, renewed every ttl/3 (e.g. 10s)', (v) => parseDuration(v, '--ttl'))
    .option('--wait <duration>', 'queue up to this long for the lock (FIFO); 0 = give up at once', (v) => parseDuration(v, '--wait'), 0)
    .option('--grace <duration>', 'after SIGTERM on lock loss, wait this long before SIGKILL', (v) => parseDuration(v, '--grace'), 5000)
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .option('--owner <owner>', 'owner name to hold the lock as (default: <host>:<pid>:<random>/1)')
    .option('--timeout <duration>', 'deadline of each call to the cluster, retries included', (v) => parseDuration(v, '--timeout'), 10_000)
    .option('--quiet', 'do not print what happens to the lock on stderr')
    .addHelpText(
      'after',
      `
The command gets LEASEHOLD_KEY, LEASEHOLD_TOKEN (the fencing token: pass it with every write to the
protected resource, which must refuse tokens older than one it has seen) and LEASEHOLD_OWNER.

When the lock is lost (a renew is refused, or none is confirmed before the lease deadline, counted from when
the last renew was sent), the command gets SIGTERM at once, and SIGKILL after --grace.
SIGINT, SIGTERM and SIGHUP sent to leasehold run are passed on to the command.

Exit status:
  the command's own status   the lock was held throughout (a command killed by signal N gives 128+N)
  ${RUN_EXIT.LOST}                         the lock was LOST while the command ran (it was sent SIGTERM)
  ${RUN_EXIT.NOT_ACQUIRED}                         the lock is held by someone else; the command did not run
  ${RUN_EXIT.UNAVAILABLE}                         the cluster did not answer; the command did not run
  ${RUN_EXIT.SPAWN_FAILED}                        the command could not be started
  ${RUN_EXIT.ERROR}                          bad usage or an unexpected error

Example:
  leasehold run --lock nightly-report --ttl 10s --wait 30s -- ./make-report.sh --date today`,
    )
    .action(async (command: string[], o: RunOptions) => {
      process.exitCode = await runUnderLock(command, o);
    });
}

async function runUnderLock(command: string[], o: RunOptions): Promise<number> {
  const say = (msg: string) => {
    if (!o.quiet) process.stderr.write(`leasehold run: ${msg}\n`);
  };
  const tls = tlsFromFlags(o);
  const client = new LockClient({ endpoints: o.endpoints, timeoutMs: o.timeout, ...(tls ? { tls } : {}) });
  let lock: LockHandle;
  try {
    lock = await client.acquire(o.lock, { ttlMs: o.ttl, waitMs: o.wait, ...(o.owner ? { owner: o.owner } : {}) });
  } catch (err) {
    client.close();
    say((err as Error).message);
    if (err instanceof LockNotAcquiredError) return RUN_EXIT.NOT_ACQUIRED;
    if (err instanceof UnavailableError) return RUN_EXIT.UNAVAILABLE;
    return RUN_EXIT.ERROR;
  }
  say(`acquired lock ${JSON.stringify(o.lock)} with token ${lock.token} (ttl ${o.ttl} ms, renewed every ${lock.renewIntervalMs} ms)`);

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
      child.kill('SIGTERM');
      // The epoch time in this line lets a supervisor (or a test) measure loss-to-signal latency.
      say(`LOST at ${Date.now()}: ${err.message}; sent SIGTERM to pid ${child.pid}, SIGKILL in ${o.grace} ms`);
      killTimer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) {
          say(`pid ${child.pid} still running after ${o.grace} ms; sending SIGKILL`);
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
  // the key at once instead of after the ttl; it never touches a newer holder's lock. Trying for longer
  // than a ttl is pointless: by then the lease has lapsed on the server by itself.
  try {
    const r = await lock.release({ timeoutMs: Math.min(o.timeout, o.ttl, 5000) });
    say(`released lock ${JSON.stringify(o.lock)} (${r.outcome})`);
  } catch (err) {
    say(`could not release lock ${JSON.stringify(o.lock)}: ${(err as Error).message}`);
  }
  client.close();

  if ('spawnError' in outcome) {
    say(`cannot run ${JSON.stringify(file)}: ${outcome.spawnError.message}`);
    return RUN_EXIT.SPAWN_FAILED;
  }
  if (lost) return RUN_EXIT.LOST;
  if (outcome.signal) return 128 + (osConstants.signals[outcome.signal] ?? 0);
  return outcome.code ?? RUN_EXIT.ERROR;
}

function waitForExit(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null } | { spawnError: Error }> {
  return new Promise((resolve) => {
    child.once('error', (err) => resolve({ spawnError: err }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}
