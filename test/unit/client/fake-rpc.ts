// A scripted stand-in for EndpointPool: each call goes to a handler the test sets per method, and is
// recorded (with the request as the attempt-0 value when a request function is given).
import * as grpc from '@grpc/grpc-js';
import type { LockRpc } from '../../../src/client/handle.js';
import { RpcError, type CallOptions, type LockMethod, type RequestSource } from '../../../src/client/rpc.js';

export interface RecordedCall {
  method: LockMethod;
  request: Record<string, unknown>;
  deadline: number;
  at: number;
  source: RequestSource;
  options: boolean | CallOptions | undefined;
}

type Handler = (req: Record<string, unknown>, call: RecordedCall, signal?: AbortSignal) => Promise<unknown> | unknown;

export class FakeRpc implements LockRpc {
  readonly endpoints = ['fake:1'];
  readonly calls: RecordedCall[] = [];
  handlers: Partial<Record<LockMethod, Handler>> = {};
  closed = false;

  call<Res>(
    method: LockMethod,
    request: RequestSource,
    deadline: number,
    signal?: AbortSignal,
    options?: boolean | CallOptions,
  ): Promise<Res> {
    const req = (typeof request === 'function' ? request(0) : request) as Record<string, unknown>;
    const rec: RecordedCall = { method, request: req, deadline, at: Date.now(), source: request, options };
    this.calls.push(rec);
    const h = this.handlers[method];
    if (!h) return Promise.reject(new RpcError(grpc.status.UNIMPLEMENTED, `no fake for ${method}`));
    return Promise.resolve().then(() => h(req, rec, signal)) as Promise<Res>;
  }

  close(): void {
    this.closed = true;
  }

  of(method: LockMethod): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }
}

/** A promise that never settles until the deadline of the call passes (fake timers), then fails like gRPC. */
export function hangUntilDeadline(call: RecordedCall, signal?: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const t = setTimeout(
      () => reject(new RpcError(grpc.status.DEADLINE_EXCEEDED, 'deadline exceeded')),
      Math.max(0, call.deadline - Date.now()),
    );
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new RpcError(grpc.status.CANCELLED, 'cancelled'));
    });
  });
}

export const granted = (token: string, ttl = 1000) => ({
  acquired: true,
  token,
  ttl_ms: String(ttl),
  expires_at_ms: '0',
  holder_owner: '',
  holder_ttl_ms: '0',
});
export const renewed = (ttl = 1000) => ({ renewed: true, ttl_ms: String(ttl), expires_at_ms: '0', reason: 'UNSPECIFIED' });
export const refused = (reason: string) => ({ renewed: false, ttl_ms: '0', expires_at_ms: '0', reason });
