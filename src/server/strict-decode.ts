// Strict request decoding for the public Lock service. Protobuf decoders silently skip unknown fields
// and gRPC turns an undecodable body into INTERNAL; the contract (SPEC.md) wants a clear
// INVALID_ARGUMENT naming the problem instead. Before the normal decode we walk the top-level fields
// of the request (a small hand-written varint walk: no library exposes "reject unknown fields" for
// proto-loader's dynamic messages) and check each field number and wire type against the descriptor.
// A bad request decodes to a marker object `{ __invalid: reason }` that the handler answers with
// INVALID_ARGUMENT; it never reaches validation, Raft, or the state machine.
import type * as grpc from '@grpc/grpc-js';

interface FieldDescriptor {
  name: string;
  number: number;
  type: string;
}

const WIRE_TYPE_OF: Record<string, number> = {
  TYPE_STRING: 2,
  TYPE_BYTES: 2,
  TYPE_MESSAGE: 2,
  TYPE_INT64: 0,
  TYPE_UINT64: 0,
  TYPE_INT32: 0,
  TYPE_UINT32: 0,
  TYPE_SINT64: 0,
  TYPE_SINT32: 0,
  TYPE_BOOL: 0,
  TYPE_ENUM: 0,
  TYPE_FIXED64: 1,
  TYPE_SFIXED64: 1,
  TYPE_DOUBLE: 1,
  TYPE_FIXED32: 5,
  TYPE_SFIXED32: 5,
  TYPE_FLOAT: 5,
};

class WalkError extends Error {}

function readVarint(buf: Buffer, at: { pos: number }): bigint {
  let result = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    if (at.pos >= buf.length) throw new WalkError('truncated varint');
    const b = buf[at.pos++]!;
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return result;
    shift += 7n;
  }
  throw new WalkError('varint longer than 10 bytes');
}

/** Returns a reason when `buf` has an unknown field or a field of the wrong wire type; null when fine. */
function checkFields(buf: Buffer, byNumber: ReadonlyMap<number, FieldDescriptor>, messageName: string): string | null {
  const at = { pos: 0 };
  try {
    while (at.pos < buf.length) {
      const tag = readVarint(buf, at);
      const fieldNumber = Number(tag >> 3n);
      const wireType = Number(tag & 7n);
      const field = byNumber.get(fieldNumber);
      if (!field) return `${messageName}: unknown field number ${fieldNumber}`;
      const expected = WIRE_TYPE_OF[field.type];
      if (expected !== undefined && expected !== wireType) {
        return `${field.name}: wrong wire type ${wireType} for a ${field.type.replace('TYPE_', '').toLowerCase()} field`;
      }
      switch (wireType) {
        case 0:
          readVarint(buf, at);
          break;
        case 1:
          at.pos += 8;
          break;
        case 2: {
          const len = Number(readVarint(buf, at));
          at.pos += len;
          break;
        }
        case 5:
          at.pos += 4;
          break;
        default:
          return `${field.name}: unsupported wire type ${wireType}`;
      }
      if (at.pos > buf.length) return `${field.name}: truncated value`;
    }
  } catch (err) {
    return `${messageName}: malformed message (${(err as Error).message})`;
  }
  return null;
}

/** A copy of `service` whose request deserializers reject unknown fields and wire-type mismatches. */
export function strictRequestDeserializers<S extends grpc.ServiceDefinition>(service: S): S {
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(service)) {
    const def = method as grpc.MethodDefinition<unknown, unknown> & { requestType?: { type?: { name?: string; field?: FieldDescriptor[] } } };
    // Built once per method, not per request: this runs on every call's hot path.
    const byNumber = new Map((def.requestType?.type?.field ?? []).map((f) => [f.number, f]));
    const messageName = def.requestType?.type?.name ?? 'request';
    const original = def.requestDeserialize;
    out[name] = {
      ...def,
      requestDeserialize: (buf: Buffer) => {
        const problem = checkFields(buf, byNumber, messageName);
        if (problem) return { __invalid: problem };
        try {
          return original(buf);
        } catch (err) {
          return { __invalid: `${messageName}: cannot decode (${(err as Error).message})` };
        }
      },
    };
  }
  return out as S;
}
