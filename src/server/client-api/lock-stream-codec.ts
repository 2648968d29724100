// Lock/Stream's server-side codec: each LockCall's envelope read by hand (wire/call-envelope-decode.ts) and
// the call inside decoded once, strictly (call-bodies.ts), its bytes kept so a follower forwards them as
// they came; the answers are written as the bytes encodeAnswerEnvelope made. The client keeps protobufjs
// both ways: the bytes are the same proto (lock.proto LockCall / LockAnswer).
import type * as grpc from '@grpc/grpc-js';
import type { CallEnvelope } from '../../wire/call-envelope.js';
import { decodeCallEnvelope } from '../../wire/call-envelope-decode.js';
import { CodecError } from '../../wire/scalars.js';
import { decodeRequestBody } from './call-bodies.js';
import type { InvalidRequest } from './strict-decode.js';

/** A LockCall as Lock/Stream serves it: the envelope, and the request inside decoded (undefined without one). */
export interface StreamCall extends CallEnvelope {
  request: Record<string, unknown> | undefined;
}

/** One LockCall's bytes, or the reason it is refused (naming the field: `acquire.ttl_ms: ...`). A bad
 *  call inside ends the stream as a bad envelope does (lock-stream.ts): the strict decoder refused the
 *  whole message so before, and a client that sends one is broken. */
export function decodeLockCall(bytes: Buffer): StreamCall | InvalidRequest {
  let envelope: CallEnvelope;
  try {
    envelope = decodeCallEnvelope(bytes, 'lock');
  } catch (err) {
    if (err instanceof CodecError) return { __invalid: err.message };
    return { __invalid: `LockCall: cannot decode (${(err as Error).message})` };
  }
  // The envelope becomes the StreamCall (no second object per call).
  const call = envelope as StreamCall;
  call.request = undefined;
  if (envelope.name === undefined || envelope.body === undefined) return call;
  const decoded = decodeRequestBody(envelope.name, envelope.body);
  if ('invalid' in decoded) return { __invalid: decoded.invalid };
  call.request = decoded.request;
  return call;
}

/** Lock/Stream's method definition with this codec on the server's side. */
export function withLockStreamCodec(method: grpc.MethodDefinition<unknown, unknown>): grpc.MethodDefinition<unknown, unknown> {
  return {
    ...method,
    requestDeserialize: decodeLockCall,
    responseSerialize: (bytes: unknown) => bytes as Buffer,
    // Tells strict-decode.ts's strictRequestDeserializers not to walk the message again.
    ownStrictDecoder: true,
  } as grpc.MethodDefinition<unknown, unknown>;
}
