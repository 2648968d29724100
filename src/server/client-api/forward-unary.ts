// Forwarding a lock call to the leader as a unary call on its client port: for Revoke, and for every call
// when there is no Forward stream (no peer link, a test double). One gRPC client per leader address, kept
// until the credentials change or the node closes. `callForwarded` is the unary call itself, which the
// Cluster service's forwarding (cluster-api.ts) makes too.
import * as grpc from '@grpc/grpc-js';
import { NODE_CHANNEL_BACKOFF } from '../../transport/peer-link.js';
import { lockGrpcService, type LockStub } from '../../wire/lock.js';
import type { WireAnswer } from './answers-to-wire.js';
import { FORWARDED_METADATA } from './forward-once.js';
import type { CallReply, LockCallMethod } from './lock-calls.js';

export interface UnaryForwarderOptions {
  /** Node id -> client address (kept current by the runtime as the membership changes). */
  members: Map<string, string>;
  /** nodes[].peerDialOverrides: forward to these members here instead. */
  dialOverrides?: ReadonlyMap<string, string>;
  /** Channel credentials to forward with; default plaintext. */
  credentials?: grpc.ChannelCredentials;
  /** The leader's client address as this node knows it (the reply's leader hint). */
  leaderAddress: () => string | undefined;
}

export class UnaryForwarder {
  private readonly clients = new Map<string, LockStub>();
  private credentials: grpc.ChannelCredentials;
  /** Dialled with TLS: the leader's certificate names its id, which the channel is told to expect. */
  private readonly tls: boolean;

  constructor(private readonly opts: UnaryForwarderOptions) {
    this.credentials = opts.credentials ?? grpc.credentials.createInsecure();
    this.tls = opts.credentials !== undefined;
  }

  /** Reloaded certificates: channels are rebuilt with them on next use (the caller closes the old ones). */
  setCredentials(credentials: grpc.ChannelCredentials): void {
    this.credentials = credentials;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  /** A unary call to the leader's client port with the forwarded metadata and the caller's deadline. */
  forward(method: LockCallMethod, request: unknown, leaderId: string, deadlineMs: number): Promise<CallReply<WireAnswer>> {
    const address = this.opts.dialOverrides?.get(leaderId) ?? this.opts.members.get(leaderId);
    if (!address)
      return Promise.resolve({
        code: grpc.status.UNAVAILABLE,
        details: `the leader ${leaderId} has no known client address; retry`,
        response: null,
        leader: '',
      });
    let client = this.clients.get(address);
    if (!client) {
      // With TLS the leader's certificate names its id, not necessarily its address.
      client = lockGrpcService.client(address, this.credentials, {
        ...NODE_CHANNEL_BACKOFF,
        ...(this.tls ? { 'grpc.ssl_target_name_override': leaderId, 'grpc.default_authority': leaderId } : {}),
      });
      this.clients.set(address, client);
    }
    return new Promise((resolve) => {
      callForwarded(client, method, request, leaderId, deadlineMs, (err, value) => {
        if (err) resolve({ code: err.code, details: err.details, response: null, leader: '' });
        else resolve({ code: grpc.status.OK, details: '', response: value as WireAnswer, leader: this.opts.leaderAddress() ?? '' });
      });
    });
  }
}

/**
 * Calls `method` of a Lock or Cluster client unary on the leader `leaderId`, marked forwarded (the leader
 * answers it and never forwards it again: forward-once.ts) and with the caller's deadline. An error keeps
 * the leader's code and message, and says it came through us.
 */
export function callForwarded(
  client: grpc.Client,
  method: string,
  request: unknown,
  leaderId: string,
  deadlineMs: number,
  done: (err: { code: grpc.status; details: string } | null, value?: unknown) => void,
): void {
  const md = new grpc.Metadata();
  md.set(FORWARDED_METADATA, '1');
  const fn = (client as unknown as Record<string, unknown>)[method] as (
    req: unknown,
    md: grpc.Metadata,
    opts: Partial<grpc.CallOptions>,
    cb: (e: grpc.ServiceError | null, v?: unknown) => void,
  ) => void;
  fn.call(client, request, md, { deadline: new Date(deadlineMs) }, (err, value) => {
    if (err) done({ code: err.code, details: `${err.details} (forwarded to leader ${leaderId})` });
    else done(null, value);
  });
}
