// Who may speak to this node over the peer services — one admission shared by both peer servers (the Raft
// stream and the Forward stream), so a rule added for one cannot be missed by the other:
// - TLS (SPEC "Identity"): a stream is accepted only with a client certificate naming a current member, and
//   every message on it must come `from` a name on that certificate (peer-auth.ts);
// - every message carries the sender's cluster id; a message from another cluster, or from an id that is
//   not a current member (and not the leader we follow, nor one the members vouched for), is refused.
//   Without TLS this is a guard against misconfiguration (a node of another cluster, a removed node), not
//   authentication.
import type { PeerCertificate } from 'node:tls';
import type { NodeId } from '../raft/core/types.js';
import type { NodeLogger } from '../raft/logger.js';
import type { PeerAuthenticator, PeerVerdict } from './peer-auth.js';

/** Who may speak to us: our cluster id ('' while joining: anyone) and the current members. */
export interface PeerIdentity {
  clusterId: string;
  /** Empty while joining: we know no configuration yet. */
  members: ReadonlySet<NodeId>;
  /** The leader we follow: heard even when our log already removes it (it leads until that commits). */
  leaderId?: NodeId | null;
}

/** How often at most we ask the members about one unknown sender. */
const ASK_ABOUT_SENDER_EVERY_MS = 3000;
/** Bounds on the per-sender memory a flood of made-up ids could otherwise grow. */
const MAX_SENDERS_ASKED = 1000;
const MAX_REFUSALS_LOGGED = 10_000;

/** A stream admitted by its certificate (or without TLS); its messages are judged with it. */
export type AdmittedStream = { verdict: Extract<PeerVerdict, { ok: true }> | null; remote: string };

/** Why a message is refused: `auth` ends the stream (a certificate problem), `identity` drops the message. */
export type MessageRefusal = { kind: 'auth' | 'identity'; reason: string };

export class PeerAdmission {
  private identity: PeerIdentity = { clusterId: '', members: new Set() };
  /** Senders already logged as refused, with the reason (one line per sender and reason). */
  private readonly refusedLogged = new Set<string>();
  /** Senders the current members vouched for though our configuration does not list them (yet). */
  private readonly vouched = new Set<NodeId>();
  private readonly lastAsked = new Map<NodeId, number>();

  constructor(
    private readonly opts: {
      selfId: NodeId;
      logger: NodeLogger;
      authenticator?: PeerAuthenticator;
      /** A sender of our cluster that is not in our configuration (see PeerTransportOptions). */
      onUnknownSender?: (from: NodeId) => void;
    },
  ) {}

  get clusterId(): string {
    return this.identity.clusterId;
  }

  setIdentity(identity: PeerIdentity): void {
    this.identity = identity;
    // Our own configuration speaks now; vouching was only for while it lagged.
    for (const id of this.vouched) if (identity.members.has(id)) this.vouched.delete(id);
  }

  /** The leader we now follow (see PeerIdentity.leaderId). */
  setLeader(leaderId: NodeId | null): void {
    this.identity = { ...this.identity, leaderId };
  }

  /** The members say `id` is one of them (our log has not caught up): hear it. */
  vouch(id: NodeId): void {
    this.vouched.add(id);
  }

  /** Admits a stream by its TLS client certificate (anyone without TLS), or says why not. The certificate
   *  is read only with TLS on. */
  admitStream(certificate: () => PeerCertificate | undefined, remote: string): AdmittedStream | { refused: string } {
    const auth = this.opts.authenticator;
    if (!auth) return { verdict: null, remote };
    const verdict = auth.acceptStream(certificate(), remote);
    return verdict.ok ? { verdict, remote } : { refused: verdict.reason };
  }

  /** Judges one message on an admitted stream: null when it may be heard. */
  admitMessage(stream: AdmittedStream, from: NodeId, clusterId: string): MessageRefusal | null {
    const auth = this.opts.authenticator;
    if (auth && stream.verdict) {
      const v = auth.acceptFrom(stream.verdict, from, stream.remote);
      if (!v.ok) return { kind: 'auth', reason: v.reason };
    }
    const refused = this.identityRefusal(from, clusterId);
    if (refused === null) return null;
    const key = `${from}|${refused}`;
    if (!this.refusedLogged.has(key) && this.refusedLogged.size < MAX_REFUSALS_LOGGED) {
      this.refusedLogged.add(key);
      this.opts.logger.warn({ nodeId: this.opts.selfId, from, reason: refused }, `refusing raft messages from ${from}: ${refused}`);
    }
    return { kind: 'identity', reason: refused };
  }

  /** Why a message from `from` stamped with `clusterId` must be refused, or null. */
  private identityRefusal(from: NodeId, clusterId: string): string | null {
    const ours = this.identity.clusterId;
    // '' is a joining node that has not yet learned the id from our log: the member check below decides.
    if (ours !== '' && clusterId !== '' && clusterId !== ours) return `it belongs to cluster '${clusterId}', we are '${ours}'`;
    if (this.identity.members.size > 0 && !this.identity.members.has(from) && from !== this.identity.leaderId && !this.vouched.has(from)) {
      const now = Date.now();
      if (
        this.opts.onUnknownSender &&
        now - (this.lastAsked.get(from) ?? 0) > ASK_ABOUT_SENDER_EVERY_MS &&
        this.lastAsked.size < MAX_SENDERS_ASKED
      ) {
        this.lastAsked.set(from, now);
        this.opts.onUnknownSender(from);
      }
      return 'it is not a member of this cluster';
    }
    return null;
  }
}
