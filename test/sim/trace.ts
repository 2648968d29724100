// The event trace: a ring buffer of small tuples, formatted only when someone reads it (on a violation
// or when replaying one seed). The hot path stores references (a Message, a Ready, a few numbers) and
// never builds a string — messages and Readys are never mutated after they leave the core, so keeping
// the reference is as good as a copy.
import type { Entry, Message, Ready } from '../../src/raft/core/types.js';

export class Trace {
  private readonly cap: number;
  private times: number[] = [];
  private nodes: string[] = [];
  private tags: string[] = [];
  private as: unknown[] = [];
  private bs: unknown[] = [];
  private next = 0;
  private total = 0;

  /** capacity = Infinity keeps every line (SIM_TRACE=full). */
  constructor(capacity: number) {
    this.cap = capacity;
  }

  add(time: number, node: string, tag: string, a?: unknown, b?: unknown): void {
    const i = this.next;
    this.times[i] = time;
    this.nodes[i] = node;
    this.tags[i] = tag;
    this.as[i] = a;
    this.bs[i] = b;
    this.next = i + 1 >= this.cap ? 0 : i + 1;
    this.total++;
  }

  get length(): number {
    return this.total;
  }

  /** The last `n` lines, oldest first. */
  tail(n: number): string[] {
    const held = Math.min(this.total, this.cap);
    const count = Math.min(n, held);
    const out: string[] = [];
    for (let k = held - count; k < held; k++) {
      // index of the k-th oldest line still held
      const i = this.total <= this.cap ? k : (this.next + k) % this.cap;
      out.push(this.format(i));
    }
    return out;
  }

  private format(i: number): string {
    const t = this.times[i]!.toFixed(2).padStart(9);
    const node = (this.nodes[i] || '--').padEnd(3);
    const a = this.as[i];
    const b = this.bs[i];
    let s = `${t} ${node} ${this.tags[i]}`;
    if (a !== undefined) s += ' ' + describe(a);
    if (b !== undefined) s += ' ' + describe(b);
    return s;
  }
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (typeof x !== 'object') return String(x);
  const o = x as Record<string, unknown>;
  if (typeof o['type'] === 'string' && 'from' in o && 'to' in o) return formatMessage(x as Message);
  if ('committedEntries' in o && 'messages' in o) return formatReady(x as Ready);
  // A persisted batch: entries as ranges (a configuration entry's bytes would fill the line).
  if ('hardState' in o && 'snapshot' in o && Array.isArray(o['entries'])) {
    const snap = o['snapshot'] as { meta: { index: number; term: number; conf: { voters: string[]; learners: string[] } } } | null;
    return `hardState=${describe(o['hardState'])} snapshot=${snap === null ? 'null' : `${snap.meta.index}/t${snap.meta.term} v=[${snap.meta.conf.voters.join(',')}] l=[${snap.meta.conf.learners.join(',')}]`} entries=${formatEntries(o['entries'] as Entry[])}`;
  }
  if (Array.isArray(x)) return '[' + x.map(describe).join(' ') + ']';
  const parts: string[] = [];
  for (const k of Object.keys(o)) parts.push(`${k}=${typeof o[k] === 'object' ? describe(o[k]) : String(o[k])}`);
  return parts.join(' ');
}

export function formatEntries(es: readonly Entry[]): string {
  if (es.length === 0) return '[]';
  const f = es[0]!;
  const l = es[es.length - 1]!;
  const kind = (e: Entry) => (e.kind === 'normal' ? '' : e.kind === 'noop' ? 'n' : 'c');
  if (es.length === 1) return `[${f.index}/${f.term}${kind(f)}]`;
  return `[${f.index}/${f.term}${kind(f)}..${l.index}/${l.term}${kind(l)} #${es.length}]`;
}

const SHORT: Record<Message['type'], string> = {
  RequestVote: 'RV',
  RequestVoteResponse: 'RVR',
  AppendEntries: 'AE',
  AppendEntriesResponse: 'AER',
  InstallSnapshot: 'IS',
  InstallSnapshotResponse: 'ISR',
  TimeoutNow: 'TN',
  ReadIndexRequest: 'RIQ',
  ReadIndexResponse: 'RIR',
};

export function formatMessage(m: Message): string {
  const head = `${SHORT[m.type]} ${m.from}->${m.to} t${m.term}`;
  switch (m.type) {
    case 'RequestVote':
      return `${head}${m.preVote ? ' pre' : ''}${m.transfer ? ' xfer' : ''} last=${m.lastLogIndex}/${m.lastLogTerm}`;
    case 'RequestVoteResponse':
      return `${head}${m.preVote ? ' pre' : ''} ${m.granted ? 'GRANT' : 'reject'}`;
    case 'AppendEntries':
      return `${head} prev=${m.prevLogIndex}/${m.prevLogTerm} ${formatEntries(m.entries)} lc=${m.leaderCommit} r${m.round}`;
    case 'AppendEntriesResponse':
      return m.success
        ? `${head} ok match=${m.matchIndex} r${m.round}`
        : `${head} REJ at=${m.matchIndex} hint=${m.conflictIndex}/${m.conflictTerm} r${m.round}`;
    case 'InstallSnapshot':
      return `${head} snap=${m.meta.index}/${m.meta.term} off=${m.offset}+${m.chunk.length}${m.done ? ' done' : ''} r${m.round}`;
    case 'InstallSnapshotResponse':
      return `${head} snap=${m.snapshotIndex} next=${m.nextOffset}${m.done ? ' done' : ''}${m.success ? '' : ' FAIL'} r${m.round}`;
    case 'TimeoutNow':
      return head;
    case 'ReadIndexRequest':
      return `${head} ctx=${m.ctx}`;
    case 'ReadIndexResponse':
      return `${head} ctx=${m.ctx} index=${m.index}`;
  }
}

export function formatReady(rd: Ready): string {
  const parts: string[] = [];
  if (rd.softState) parts.push(`soft=${rd.softState.role}/t${rd.softState.term}/L=${rd.softState.leaderId ?? '-'}`);
  if (rd.hardState) parts.push(`hs=t${rd.hardState.term}/v=${rd.hardState.votedFor ?? '-'}/c${rd.hardState.commitIndex}`);
  if (rd.snapshot) parts.push(`snap=${rd.snapshot.meta.index}/${rd.snapshot.meta.term}`);
  if (rd.entries.length) parts.push(`ents=${formatEntries(rd.entries)}`);
  if (rd.messages.length) parts.push(`msgs=${rd.messages.length}`);
  if (rd.committedEntries.length) parts.push(`apply=${formatEntries(rd.committedEntries)}`);
  if (rd.readStates.length) parts.push(`reads=${rd.readStates.map((r) => `${r.ctx}@${r.index}`).join(',')}`);
  if (rd.readFailures.length) parts.push(`readfail=${rd.readFailures.map((r) => `${r.ctx}:${r.reason}`).join(',')}`);
  return '{' + parts.join(' ') + '}';
}
