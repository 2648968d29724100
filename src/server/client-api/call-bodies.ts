// The request and response inside a Lock/Stream or Forward envelope (wire/call-envelope.ts), in and out
// of bytes with the Lock service's own unary codecs (protobufjs, the loader options of wire/load.ts): the
// oneof members are exactly the unary methods' request and response messages. A request's bytes are
// decoded by hand for the hot calls (wire/lock-request-decode.ts), else walked by the strict decoder
// first (strict-decode.ts), as the whole LockCall was before, so a bad field
// inside a call is refused naming it (`acquire.ttl_ms: ...`) and nothing reaches validation. The hot
// calls' responses are encoded by hand too (wire/lock-response-encode.ts), the others by protobufjs.
import type * as grpc from '@grpc/grpc-js';
import { packageDefinition } from '../../wire/load.js';
import { decodeLockRequest, decodesByHand } from '../../wire/lock-request-decode.js';
import { encodeLockResponse, encodesByHand } from '../../wire/lock-response-encode.js';
import { LOCK_CALL_NAME, lockGrpcService, type LockCallName, type LockMethod } from '../../wire/lock.js';
import { descriptorRegistry, strictProblemWithin, type DescriptorRegistry, type strictProblem } from './strict-decode.js';

interface BodyCodec {
  method: grpc.MethodDefinition<unknown, unknown>;
  descriptor: Parameters<typeof strictProblem>[1];
}

let codecs: Map<LockCallName, BodyCodec> | undefined;
let registry: DescriptorRegistry | undefined;

function codecOf(name: LockCallName): BodyCodec {
  if (codecs === undefined) {
    const definition = lockGrpcService.definition() as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
    registry = descriptorRegistry(packageDefinition());
    codecs = new Map();
    for (const [method, call] of Object.entries(LOCK_CALL_NAME) as [LockMethod, LockCallName][]) {
      const m = definition[method]!;
      const descriptor = (m as unknown as { requestType: { type: BodyCodec['descriptor'] } }).requestType.type;
      codecs.set(call, { method: m, descriptor });
    }
  }
  return codecs.get(name)!;
}

/** A call's request from its bytes, or the reason it is refused (naming the field below `name`). */
export function decodeRequestBody(name: LockCallName, body: Buffer): { request: Record<string, unknown> } | { invalid: string } {
  // The hot calls (acquire, renew, release, get) by hand, as strictly and to the same object.
  if (decodesByHand(name)) return decodeLockRequest(name, body);
  return decodeRequestBodyWithProtobufjs(name, body);
}

/** decodeRequestBody through the strict walk and protobufjs, for every call (the reference of the
 *  hand-written decoder's tests). */
export function decodeRequestBodyWithProtobufjs(
  name: LockCallName,
  body: Buffer,
): { request: Record<string, unknown> } | { invalid: string } {
  const c = codecOf(name);
  const problem = strictProblemWithin(body, c.descriptor, registry!, name);
  if (problem !== null) return { invalid: problem };
  try {
    return { request: c.method.requestDeserialize(body) as Record<string, unknown> };
  } catch (err) {
    return { invalid: `${name}: cannot decode (${(err as Error).message})` };
  }
}

/** A request object (a unary call forwarded on the Forward stream) as its bytes. */
export function encodeRequestBody(name: LockCallName, request: unknown): Buffer {
  return codecOf(name).method.requestSerialize(request);
}

/** A response object (the wire form of a result, answers-to-wire.ts, or a response decoded from the
 *  leader's unary reply) as its bytes. */
export function encodeResponseBody(name: LockCallName, response: unknown): Buffer {
  if (encodesByHand(name)) return encodeLockResponse(name, response);
  return encodeResponseBodyWithProtobufjs(name, response);
}

/** encodeResponseBody through protobufjs, for every call (the reference of the hand-written encoder's tests). */
export function encodeResponseBodyWithProtobufjs(name: LockCallName, response: unknown): Buffer {
  return codecOf(name).method.responseSerialize(response);
}

/** A response's bytes (the leader's, forwarded) as the object a unary reply is serialized from. */
export function decodeResponseBody(name: LockCallName, body: Buffer): unknown {
  return codecOf(name).method.responseDeserialize(body);
}
