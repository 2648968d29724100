// Who may speak Raft to this node. With TLS, a peer stream is accepted only from a verified certificate
// (signed by the cluster CA) whose CN or one of whose DNS SANs is the id of a current member, and every
// message on it must come `from` one of the names on that certificate — so a client with a valid
// certificate of its own, or one member posing as another, cannot inject peer messages. Membership is a
// callback, so the runtime can answer from the live configuration. Each refusal is logged once per
// identity and reason, not once per message.
import type { PeerCertificate } from 'node:tls';
import type { NodeLogger } from '../raft/logger.js';

/** The CN and DNS subject-alternative names of a certificate (what a node id may be written as). */
function certificateNames(cert: Pick<PeerCertificate, 'subject' | 'subjectaltname'> | undefined): string[] {
  if (!cert) return [];
  const names = new Set<string>();
  const cn = cert.subject?.CN as string | string[] | undefined;
  for (const n of Array.isArray(cn) ? cn : cn !== undefined ? [cn] : []) names.add(n);
  for (const part of (cert.subjectaltname ?? '').split(',')) {
    const m = /^\s*DNS:(.+?)\s*$/.exec(part);
    if (m) names.add(m[1]!);
  }
  return [...names];
}

/** The caller's certificate CN, for owner binding; undefined without a verified certificate. */
export function certificateCommonName(cert: Pick<PeerCertificate, 'subject'> | undefined): string | undefined {
  const cn = cert?.subject?.CN as string | string[] | undefined;
  return Array.isArray(cn) ? cn[0] : cn;
}

export type PeerVerdict = { ok: true; names: readonly string[] } | { ok: false; reason: string };

export interface PeerAuthOptions {
  /** Whether `id` is a current member (the runtime supplies it; membership changes rewire it). */
  isMember: (id: string) => boolean;
  logger: NodeLogger;
  selfId: string;
}

export class PeerAuthenticator {
  private readonly logged = new Set<string>();
  constructor(private readonly opts: PeerAuthOptions) {}

  /** Judge a stream by the TLS peer certificate (undefined: none, or not verified by the CA). */
  acceptStream(cert: PeerCertificate | undefined, remote: string): PeerVerdict {
    if (!cert) return this.refuse('no-cert', remote, 'no client certificate signed by the cluster CA');
    const names = certificateNames(cert);
    const members = names.filter((n) => this.opts.isMember(n));
    if (members.length === 0)
      return this.refuse(
        `not-member:${names.join(',')}`,
        remote,
        `certificate names ${JSON.stringify(names)}, none of them a current member`,
      );
    return { ok: true, names: members };
  }

  /** Judge one message's `from` on an accepted stream. */
  acceptFrom(verdict: Extract<PeerVerdict, { ok: true }>, from: string, remote: string): PeerVerdict {
    if (verdict.names.includes(from) && this.opts.isMember(from)) return verdict;
    return this.refuse(
      `spoof:${verdict.names.join(',')}:${from}`,
      remote,
      `message from ${JSON.stringify(from)} on a stream authenticated as ${JSON.stringify(verdict.names)}`,
    );
  }

  private refuse(key: string, remote: string, reason: string): PeerVerdict {
    if (!this.logged.has(key)) {
      if (this.logged.size > 10_000) this.logged.clear(); // bounded: a flood of identities cannot grow it
      this.logged.add(key);
      this.opts.logger.warn({ nodeId: this.opts.selfId, remote, reason }, 'refused peer traffic');
    }
    return { ok: false, reason };
  }
}
