// The Lock service's unary methods with the server's own codecs: the hot calls' requests (Acquire, Renew,
// Release, Get) decoded by hand (wire/lock-request-decode.ts, as strictly as the walk and in its words), and
// every unary lock reply serialized by the one response encoder a Lock/Stream or Forward answer uses
// (call-bodies.ts encodeResponseBody) — or, when a follower answers with the leader's response bytes as
// they came on its Forward stream, written as they are (no decode into an object to serialize it again).
// The other methods' requests stay behind the strict walk (strict-decode.ts); the client keeps protobufjs
// both ways: the bytes are the same proto.
import type * as grpc from '@grpc/grpc-js';
import { decodeLockRequest, decodesByHand } from '../../wire/lock-request-decode.js';
import { LOCK_CALL_NAME, type LockMethod } from '../../wire/lock.js';
import { encodeResponseBody } from './call-bodies.js';
import type { InvalidRequest } from './strict-decode.js';

type Method = grpc.MethodDefinition<unknown, unknown>;

/** A response given as bytes (Uint8Array, Buffer included) is written as it is. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** `definition` (the Lock service) with the unary lock methods on these codecs; the rest as they are. */
export function withLockUnaryCodecs<S extends grpc.ServiceDefinition>(definition: S): S {
  const out: Record<string, unknown> = { ...definition };
  for (const [method, name] of Object.entries(LOCK_CALL_NAME) as [LockMethod, (typeof LOCK_CALL_NAME)[LockMethod]][]) {
    const original = definition[method] as Method | undefined;
    if (original === undefined) throw new Error(`leasehold: the Lock service has no method ${method}`);
    const codec: Record<string, unknown> = {
      ...original,
      responseSerialize: (response: unknown): Buffer =>
        response instanceof Uint8Array ? asBuffer(response) : encodeResponseBody(name, response),
    };
    if (decodesByHand(name)) {
      codec.requestDeserialize = (bytes: Buffer): unknown => {
        const decoded = decodeLockRequest(name, bytes, 'unary');
        return 'invalid' in decoded ? ({ __invalid: decoded.invalid } satisfies InvalidRequest) : decoded.request;
      };
      // Tells strict-decode.ts's strictRequestDeserializers not to walk the message again.
      codec.ownStrictDecoder = true;
    }
    out[method] = codec;
  }
  return out as S;
}
