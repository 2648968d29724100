// Cluster commands of the `leasehold` CLI: status, members list|add|promote|remove, transfer-leader.
// Exit codes (SPEC "CLI exit codes"): 0 done; 1 usage or INVALID_ARGUMENT; 2 the cluster could not answer
// (no leader, no quorum, unreachable, deadline); 3 refused (an impossible change); 4 permission denied.
import * as grpc from '@grpc/grpc-js';
import type { Command } from 'commander';
import { EndpointPool, RpcError } from '../client/rpc.js';
import type { Member, MembersResponse, StatusResponse, TransferLeaderResponse } from '../wire/cluster.js';
import { clientTlsCredentials } from '../client/tls.js';
import { DEFAULT_ENDPOINTS, tlsFromFlags, withTlsFlags, type TlsFlags } from './client-commands.js';
import { parseDuration } from './duration.js';
import { checkEndpoints } from './args.js';
import { exitCodeForStatus } from './exit-codes.js';

interface Opts extends TlsFlags {
  endpoints: string;
  json?: boolean;
  timeout: number;
}

function common(cmd: Command, defaultTimeoutMs: number): Command {
  return withTlsFlags(cmd)
    .option('--endpoints <list>', 'comma-separated host:port of cluster nodes (env LEASEHOLD_ENDPOINTS)', DEFAULT_ENDPOINTS)
    .option('--json', 'print the response as JSON')
    .option('--timeout <duration>', 'overall deadline (e.g. 30s)', (v) => parseDuration(v, '--timeout'), defaultTimeoutMs);
}

function poolFor(o: Opts): EndpointPool {
  const tls = tlsFromFlags(o);
  return new EndpointPool({ endpoints: checkEndpoints(o.endpoints), ...(tls ? { credentials: clientTlsCredentials(tls) } : {}) });
}

/** SPEC's exit code of a failed cluster call: the one mapping every command shares (exit-codes.ts). */
function exitCodeOfRpc(err: RpcError): number {
  return exitCodeForStatus(err.code);
}

export interface StatusRow {
  endpoint: string;
  status?: StatusResponse;
  error?: string;
}

/**
 * SPEC: exit 0 only when the endpoints that answered agree on one leader, and that leader itself answered
 * as a leader holding a quorum (its health is SERVING); 2 otherwise — no leader, no quorum, or nobody
 * answered. Returns the code and the reason printed with it.
 */
export function judgeStatus(rows: StatusRow[]): { code: number; reason: string } {
  const answered = rows.filter((r) => r.status);
  if (answered.length === 0) return { code: 2, reason: 'no endpoint answered' };
  const leaders = new Set(answered.map((r) => r.status!.leader_id));
  if (leaders.has('')) {
    const lost = answered.filter((r) => r.status!.leader_id === '').map((r) => r.status!.node_id);
    return { code: 2, reason: `no leader known to ${lost.join(', ')}` };
  }
  if (leaders.size > 1) return { code: 2, reason: `the nodes disagree on the leader (${[...leaders].join(', ')})` };
  const leaderId = [...leaders][0]!;
  const leaderRow = answered.find((r) => r.status!.node_id === leaderId);
  if (!leaderRow) return { code: 2, reason: `the leader ${leaderId} did not answer` };
  if (leaderRow.status!.role !== 'LEADER')
    return { code: 2, reason: `${leaderId} is named leader but answers as ${leaderRow.status!.role}` };
  if (!leaderRow.status!.serving) return { code: 2, reason: `the leader ${leaderId} has no quorum (${leaderRow.status!.health})` };
  return { code: 0, reason: `leader ${leaderId}, term ${leaderRow.status!.term}` };
}

function printMembers(members: Member[]): string {
  const rows = members.map(
    (m) => `${m.id}  ${m.address}  ${m.learner ? 'learner' : 'voter'}${m.match_index !== '0' ? `  match ${m.match_index}` : ''}`,
  );
  return rows.join('\n');
}

/** Run `fn` on a pool of the endpoints; print its answer (or JSON), or the failure with SPEC's exit code. */
async function answer<T>(
  o: Opts,
  fn: (pool: EndpointPool) => Promise<T>,
  print: (r: T) => string,
  asJson: (r: T) => unknown = (r) => r,
): Promise<void> {
  const pool = poolFor(o);
  try {
    const r = await fn(pool);
    process.stdout.write((o.json ? JSON.stringify(asJson(r), null, 2) : print(r)) + '\n');
    process.exitCode = 0;
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    process.stderr.write(`leasehold: ${err.message}\n`);
    process.exitCode = exitCodeOfRpc(err);
  } finally {
    pool.close();
  }
}

function clusterCall<Res>(
  o: Opts,
  method: Parameters<EndpointPool['clusterCall']>[0],
  request: object,
  print: (r: Res) => string,
): Promise<void> {
  return answer(o, (pool) => pool.clusterCall<Res>(method, request, Date.now() + o.timeout), print);
}

/** The leader's Status if it answers, else any node's: the leader has the match indexes, followers may lag. */
async function bestStatus(p: EndpointPool, deadline: number): Promise<StatusResponse> {
  let best: StatusResponse | null = null;
  let lastErr: RpcError | null = null;
  for (const ep of p.endpoints) {
    try {
      const s = await p.status(ep, deadline);
      if (!best || s.role === 'LEADER') best = s;
      if (s.role === 'LEADER') break;
    } catch (err) {
      if (err instanceof RpcError) lastErr = err;
      else throw err;
    }
  }
  if (!best) throw lastErr ?? new RpcError(grpc.status.UNAVAILABLE, 'no endpoint answered');
  return best;
}

export function clusterCommands(program: Command): void {
  common(
    program
      .command('status')
      .description("show each node's role, term, leader, indexes and health; exit 0 only when they agree on one leader with a quorum"),
    3000,
  ).action(async (o: Opts) => {
    const p = poolFor(o);
    const deadline = Date.now() + o.timeout;
    const rows: StatusRow[] = await Promise.all(
      p.endpoints.map(async (endpoint) => {
        try {
          return { endpoint, status: await p.status(endpoint, deadline) };
        } catch (err) {
          return { endpoint, error: (err as Error).message };
        }
      }),
    );
    p.close();
    const verdict = judgeStatus(rows);
    const silent = rows.filter((r) => !r.status).map((r) => r.endpoint);
    if (o.json) {
      process.stdout.write(
        JSON.stringify({ ok: verdict.code === 0, reason: verdict.reason, unreachable: silent, nodes: rows }, null, 2) + '\n',
      );
    } else {
      for (const r of rows) {
        if (r.status) {
          const s = r.status;
          process.stdout.write(
            `${r.endpoint}  ${s.node_id}  ${s.role}  term ${s.term}  leader ${s.leader_id || '-'}  commit ${s.commit_index}  applied ${s.applied_index}  level ${s.cluster_level || 1}/${s.build_level || 1}  ${s.serving ? 'SERVING' : `NOT_SERVING (${s.health})`}\n`,
          );
        } else process.stdout.write(`${r.endpoint}  did not answer: ${r.error}\n`);
      }
      if (silent.length > 0) process.stdout.write(`did not answer: ${silent.join(', ')}\n`);
      process.stdout.write(`${verdict.code === 0 ? 'ok' : 'not ok'}: ${verdict.reason}\n`);
    }
    process.exitCode = verdict.code;
  });

  const members = program.command('members').description('list or change the cluster membership (one change at a time)');
  common(members.command('list').description('the members as the leader sees them (voter or learner)'), 5000).action(async (o: Opts) => {
    await answer(
      o,
      (p) => bestStatus(p, Date.now() + o.timeout),
      (s) => printMembers(s.members),
      (s) => ({ members: s.members, from: s.node_id }),
    );
  });
  common(
    members
      .command('add <id> <address>')
      .description('add a node (start it with `leasehold serve --join`); --learner to add it non-voting, then promote')
      .option('--learner', 'add as a learner: it catches up without voting or counting toward a quorum'),
    60_000,
  ).action(async (id: string, address: string, o: Opts & { learner?: boolean }) => {
    await clusterCall<MembersResponse>(
      o,
      'AddMember',
      { id, address, learner: o.learner ?? false },
      (r) => `added ${id}${o.learner ? ' as a learner' : ''}\n${printMembers(r.members)}`,
    );
  });
  common(members.command('promote <id>').description('make a learner a voter once it has caught up'), 60_000).action(
    async (id: string, o: Opts) => {
      await clusterCall<MembersResponse>(o, 'PromoteMember', { id }, (r) => `promoted ${id}\n${printMembers(r.members)}`);
    },
  );
  common(
    members.command('remove <id>').description('remove a node (the leader too: it hands over first); its id is never reused'),
    30_000,
  ).action(async (id: string, o: Opts) => {
    await clusterCall<MembersResponse>(o, 'RemoveMember', { id }, (r) => `removed ${id}\n${printMembers(r.members)}`);
  });
  common(
    program
      .command('transfer-leader [id]')
      .description('hand leadership to a voter (default: the most caught-up one), e.g. before restarting the leader'),
    10_000,
  ).action(async (id: string | undefined, o: Opts) => {
    await clusterCall<TransferLeaderResponse>(
      o,
      'TransferLeader',
      { to_id: id ?? '' },
      (r) => `leader is now ${r.leader_id} (term ${r.term})`,
    );
  });
}
