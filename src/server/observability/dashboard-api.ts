// The dashboard's JSON views (README "Dashboard"): this node's view of the cluster, and the lock state —
// locks, sessions, elections — read from the applied lock machine after a read barrier, as Lock/List
// does (list-server.ts), so a page fetched after a write shows that write whichever node serves it.
// Every view is bounded: lists are pages of at most MAX_PAGE rows with a `next` to continue from.
// Nothing here writes, and nothing calls another node: a follower reports what it knows.
import type { LockMachine } from '../../lock/machine.js';
import type { LockView } from '../../lock/types.js';
import { validateList } from '../../lock/validate.js';
import type { NodeId, Status } from '../../raft/core/types.js';
import type { ProgressView } from '../../raft/core/progress.js';
import { BUILD_LEVEL } from '../../lock/versions.js';
import { BadQueryError, wholeNumber } from './dashboard-query.js';
import { isoOrNull, valueJson, type JsonValue } from './dashboard-values.js';
import { holdersOf as holdsOf } from '../client-api/holders-view.js';
import type { ChartsJson } from './dashboard-charts.js';

/** What the views read; the runtime wires them to the node (runtime.ts). */
export interface DashboardSources {
  status(): Status;
  /** The leader's replication progress per member (meaningful on the leader only). */
  progress(): Map<NodeId, ProgressView>;
  /** What grpc.health.v1 reports for this node, and why (health.ts, RaftNode.serving). */
  health(): { serving: boolean; reason: string };
  /** Outbound peer streams: true while connected. */
  peers(): Map<NodeId, boolean>;
  /** A member's client (gRPC) address. */
  clientAddressOf(id: NodeId): string | undefined;
  /** Has this node ever heard from `id`? */
  everHeard(id: NodeId): boolean;
  /** The applied lock state (read through on every use: a snapshot restore replaces it). */
  machine(): LockMachine;
  readBarrier(timeoutMs: number): Promise<number>;
  barrierTimeoutMs: number;
  /** The charts' samples of the last minutes (dashboard-charts.ts). */
  charts(): ChartsJson;
}

/** The lock views could not be confirmed current (no leader, no quorum): answered 503. */
export class NotCurrentError extends Error {
  override readonly name = 'NotCurrentError';
}

const MAX_PAGE = 1000;
const DEFAULT_PAGE = 100;
/** Where campaigns live (src/client/election.ts, electionKey): the server may not import the client. */
const ELECTION_PREFIX = 'election/';

// ---------------------------------------------------------------------------------------------------
// /api/cluster
// ---------------------------------------------------------------------------------------------------

export interface MemberJson {
  id: NodeId;
  address: string;
  voter: boolean;
  /** What this node knows: its own role; 'leader' for the leader it follows; else 'follower' or 'learner'. */
  role: string;
  self: boolean;
  /** On the leader: the highest index known to be replicated there, and commit − match. Else null. */
  match_index: number | null;
  lag: number | null;
  /** On the leader: the replication state (probe, replicate, snapshot). Else null. */
  progress: string | null;
  /** Our outbound peer stream to it (null for ourselves). */
  connected: boolean | null;
  /** Has this node heard from it since it started? */
  seen: boolean;
  /** What the peer link means for this pair, in words (the page's "peer link" column); null for ourselves. */
  link: string | null;
}

export interface ClusterJson {
  node: {
    id: NodeId;
    role: string;
    term: number;
    leader: NodeId | null;
    commit_index: number;
    applied_index: number;
    last_index: number;
    serving: boolean;
    health: string;
    cluster_level: number;
    build_level: number;
  };
  cluster_id: string;
  /** Whose numbers these are: the match index and lag come only from the leader's own progress. */
  view: string;
  members: MemberJson[];
}

export function clusterView(src: DashboardSources): ClusterJson {
  const st = src.status();
  const health = src.health();
  const leading = st.role === 'leader';
  const progress = leading ? src.progress() : new Map<NodeId, ProgressView>();
  const peers = src.peers();
  const row = (id: NodeId, learner: boolean): MemberJson => {
    const self = id === st.id;
    const pr = progress.get(id);
    const match = self && leading ? st.lastIndex : (pr?.match ?? null);
    return {
      id,
      address: src.clientAddressOf(id) ?? st.conf.addresses[id] ?? '',
      voter: !learner,
      role: self ? st.role : id === st.leaderId ? 'leader' : learner ? 'learner' : 'follower',
      self,
      match_index: leading ? match : null,
      lag: leading && match !== null ? Math.max(0, st.commitIndex - match) : null,
      progress: leading && !self ? (pr?.state ?? null) : null,
      connected: self ? null : (peers.get(id) ?? false),
      seen: self || src.everHeard(id),
      link: self ? null : linkText(st, id, peers.get(id) ?? false, src.everHeard(id)),
    };
  };
  return {
    node: {
      id: st.id,
      role: st.role,
      term: st.term,
      leader: st.leaderId,
      commit_index: st.commitIndex,
      applied_index: st.appliedIndex,
      last_index: st.lastIndex,
      serving: health.serving,
      health: health.reason,
      // The version gate (src/lock/versions.ts): what the applied log uses, and what this build reads.
      cluster_level: src.machine().clusterLevel,
      build_level: BUILD_LEVEL,
    },
    cluster_id: st.conf.clusterId,
    view: leading
      ? 'this node leads: match index and lag are its replication progress'
      : st.leaderId
        ? `this node follows ${st.leaderId}: match index and lag are known only to the leader (open its dashboard)`
        : 'this node knows no leader',
    members: [...st.conf.voters.map((id) => row(id, false)), ...st.conf.learners.map((id) => row(id, true))],
  };
}

/**
 * The peer-link cell. In Raft a follower talks only to its leader (and a candidate to the voters): a
 * follower has no stream to another follower and hears nothing from it, which is normal, not a fault.
 * A missing link to or from the leader is one.
 */
export const FOLLOWER_TO_FOLLOWER = 'none needed: followers talk only to the leader (Raft), not to each other';

function linkText(st: Status, id: NodeId, connected: boolean, seen: boolean): string {
  const following = st.role === 'follower' && st.leaderId !== null && st.leaderId !== st.id;
  // A stream left open by an earlier election carries nothing now; say so rather than "connected".
  if (following && id !== st.leaderId) return `${FOLLOWER_TO_FOLLOWER}${connected ? ' (a stream from an earlier election is idle)' : ''}`;
  if (connected) return 'connected';
  const what = following ? 'not connected to the leader' : 'not connected';
  return seen ? what : `${what} (never heard)`;
}

// ---------------------------------------------------------------------------------------------------
// /api/locks, /api/elections
// ---------------------------------------------------------------------------------------------------

export interface HolderJson extends JsonValue {
  owner: string;
  token: string;
  /** Lease time left at the log time of the read. */
  ttl_ms: number;
  expires_at_ms: number;
  expires_at: string | null;
  /** '0' = not under a session. */
  session_id: string;
  /** A shared (read) hold; false for a mutex's or a semaphore's. */
  shared: boolean;
}

export interface LockJson {
  key: string;
  /** In token order (the machine keeps one hold per key today: at most one). */
  holders: HolderJson[];
  waiters: number;
  last_token: string;
}

interface Page<T> {
  /** The applied index the page was read at (a watch from here misses nothing). */
  index: number;
  read: 'linearizable';
  rows: T[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

function holdersOf(m: LockMachine, key: string, view: LockView): HolderJson[] {
  return holdsOf(view, m.valueOf(key)).map((h) => ({
    owner: h.owner,
    token: h.token.toString(),
    ttl_ms: h.ttlMs,
    expires_at_ms: h.expiresAtMs,
    expires_at: isoOrNull(h.expiresAtMs),
    session_id: h.sessionId.toString(),
    shared: h.shared,
    ...valueJson(h.value ?? undefined),
  }));
}

function lockJson(m: LockMachine, key: string): LockJson {
  const view = m.get(key);
  return { key, holders: holdersOf(m, key, view), waiters: m.waiterCountOf(key), last_token: view.lastToken.toString() };
}

/** Reads `prefix`, `after` and `limit` like Lock/List (validateList), naming the query parameter on an error. */
function keyPaging(query: Map<string, string>, fixedPrefix: string | null): { prefix: string; afterKey: string; limit: number } {
  const limit = wholeNumber('limit', query.get('limit'), { min: 1, max: MAX_PAGE, fallback: DEFAULT_PAGE });
  const prefix = fixedPrefix ?? query.get('prefix') ?? '';
  const v = validateList({ prefix, limit, pageToken: query.get('after') ?? '' });
  if (!v.ok) {
    // validateList names its wire fields; `after` is page_token's name here.
    if (v.error.field !== 'page_token') throw new BadQueryError(v.error.field, v.error.message);
    throw new BadQueryError(
      'after',
      `after must be a key under the prefix ${JSON.stringify(prefix)} (the \`next\` of a page), got ${JSON.stringify((query.get('after') ?? '').slice(0, 80))}`,
    );
  }
  return v.value;
}

async function current(src: DashboardSources): Promise<LockMachine> {
  try {
    await src.readBarrier(src.barrierTimeoutMs);
  } catch (err) {
    throw new NotCurrentError(
      `cannot confirm this node is up to date (${err instanceof Error ? err.message : String(err)}); retry, maybe on another node`,
    );
  }
  return src.machine();
}

async function keyPage<T>(
  src: DashboardSources,
  paging: { prefix: string; afterKey: string; limit: number },
  rowOf: (m: LockMachine, key: string) => T,
): Promise<Page<T>> {
  const m = await current(src);
  // One more than the page: whether there is a next page.
  const keys = m.listKeys(paging.prefix, paging.afterKey, paging.limit + 1);
  const page = keys.slice(0, paging.limit);
  return {
    index: m.appliedIndex,
    read: 'linearizable',
    rows: page.map((key) => rowOf(m, key)),
    next: keys.length > paging.limit ? page[page.length - 1]! : null,
  };
}

export async function locksView(src: DashboardSources, query: Map<string, string>): Promise<object> {
  const paging = keyPaging(query, null);
  const { rows, ...page } = await keyPage(src, paging, lockJson);
  return { ...page, prefix: paging.prefix, locks: rows };
}

export interface ElectionJson {
  /** The name campaigned for (the key without `election/`). */
  name: string;
  key: string;
  /** The holder with the lowest token leads (a campaign is a mutex: there is one); null between leaders. */
  leader: HolderJson | null;
  /** Candidates waiting in line. */
  candidates_waiting: number;
}

export async function electionsView(src: DashboardSources, query: Map<string, string>): Promise<object> {
  const paging = keyPaging(query, ELECTION_PREFIX);
  const { rows, ...page } = await keyPage(src, paging, (m, key): ElectionJson => {
    const holders = holdersOf(m, key, m.get(key));
    return { name: key.slice(ELECTION_PREFIX.length), key, leader: holders[0] ?? null, candidates_waiting: m.waiterCountOf(key) };
  });
  return { ...page, elections: rows };
}

// ---------------------------------------------------------------------------------------------------
// /api/sessions
// ---------------------------------------------------------------------------------------------------

export interface SessionJson {
  id: string;
  owner: string;
  /** False: ran out by log time, its ending entry not applied yet. */
  live: boolean;
  ttl_ms: number;
  expires_at_ms: number;
  expires_at: string | null;
  holds: number;
}

export async function sessionsView(src: DashboardSources, query: Map<string, string>): Promise<object> {
  const limit = wholeNumber('limit', query.get('limit'), { min: 1, max: MAX_PAGE, fallback: DEFAULT_PAGE });
  const after = wholeNumber('after', query.get('after'), { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 });
  const m = await current(src);
  // sessionList() is bounded by limits.maxSessions; the answer is bounded by `limit`.
  const later = m.sessionList().filter((s) => s.id > after);
  const page = later.slice(0, limit);
  const sessions: SessionJson[] = page.map((s) => ({
    id: String(s.id),
    owner: s.owner,
    live: s.live,
    ttl_ms: s.ttlMs,
    expires_at_ms: s.expiresAtMs,
    expires_at: isoOrNull(s.expiresAtMs),
    holds: s.holds,
  }));
  return { index: m.appliedIndex, read: 'linearizable', sessions, next: later.length > limit ? String(page[page.length - 1]!.id) : null };
}

/** The query parameters each view takes (anything else is a 400). */
export const VIEW_PARAMETERS = {
  cluster: [],
  charts: [],
  locks: ['prefix', 'after', 'limit'],
  elections: ['after', 'limit'],
  sessions: ['after', 'limit'],
} as const satisfies Record<string, readonly string[]>;
