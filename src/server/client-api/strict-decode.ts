// Strict request decoding for every service on the port (Lock, Cluster, the Raft peer stream, health).
// Protobuf decoders silently skip unknown fields, replace invalid UTF-8 with U+FFFD (so two different byte
// strings decode to the same key: `k\xff` and `k\xfe` were one lock), truncate an over-long varint to its
// low 64 (or 32) bits (2^64 + 10000 in ttl_ms was read as 10000), and gRPC turns an undecodable body into
// INTERNAL. The contract (SPEC.md) wants a clear INVALID_ARGUMENT naming the problem instead, and nothing
// applied. So before the normal decode we walk the request (a small hand-written varint walk: no library
// exposes "reject unknown fields" for proto-loader's dynamic messages), recursing into sub-messages, and
// check each field's number, wire type, varint range and string bytes against the descriptor.
// A bad request decodes to a marker object `{ __invalid: reason }` that the handler answers with
// INVALID_ARGUMENT; it never reaches validation, Raft, or the state machine.
import { isUtf8 } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';

interface FieldDescriptor {
  name: string;
  number: number;
  type: string;
  label?: string;
  typeName?: string;
}

interface MessageDescriptor {
  name?: string;
  field?: FieldDescriptor[];
}

/** Message descriptors by full name ('leasehold.v1.AppendEntries'), to resolve sub-message fields. */
export type DescriptorRegistry = ReadonlyMap<string, MessageDescriptor>;

/** Every message type of one or more proto-loader package definitions. */
export function descriptorRegistry(...definitions: object[]): DescriptorRegistry {
  const out = new Map<string, MessageDescriptor>();
  for (const def of definitions) {
    for (const [name, entry] of Object.entries(def)) {
      const e = entry as { format?: string; type?: MessageDescriptor };
      if (typeof e.format === 'string' && e.format.includes('DescriptorProto') && e.type?.field) out.set(name, e.type);
    }
  }
  return out;
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

const U32 = 2n ** 32n - 1n;
const U64 = 2n ** 64n - 1n;
const I32_MAX = 2n ** 31n - 1n;
/** int32 and enum values below zero travel sign-extended to 64 bits (ten bytes). */
const I32_NEG_MIN = 2n ** 64n - 2n ** 31n;

/** Whether a decoded varint fits its field; a value beyond the field's width would be silently truncated
 *  by the decoder (wrapped), which is exactly the aliasing the contract forbids. */
function varintFits(type: string, v: bigint): boolean {
  switch (type) {
    case 'TYPE_UINT32':
    case 'TYPE_SINT32':
      return v <= U32;
    case 'TYPE_INT32':
    case 'TYPE_ENUM':
      return v <= I32_MAX || (v >= I32_NEG_MIN && v <= U64);
    case 'TYPE_BOOL':
      return v <= 1n;
    default:
      return v <= U64;
  }
}

/** Nesting deeper than our protos ever go is refused rather than recursed into (a stack-exhaustion guard). */
const MAX_DEPTH = 16;

class WalkError extends Error {}

const typeLabel = (type: string): string => type.replace('TYPE_', '').toLowerCase();

/** A field as the walker needs it, derived once per message descriptor (the walk runs on every message
 *  of every call: building a field map and a BigInt per varint each time cost as much as protobufjs's
 *  own decode of the message, seen in the bench profile). */
interface FieldPlan {
  field: FieldDescriptor;
  /** Wire type the field's type travels as; undefined for a type we do not know (accepted as is). */
  expected: number | undefined;
  repeated: boolean;
  /** The sub-message's descriptor (TYPE_MESSAGE), resolved on first use; null when unknown. */
  sub: MessageDescriptor | null | undefined;
}

/** A varint of at most four bytes is below 2^28: it fits every integer field but bool, checked apart. */
const SMALL_VARINT_BYTES = 4;

class Walker {
  private readonly plans = new WeakMap<MessageDescriptor, Map<number, FieldPlan>>();
  private pos = 0;

  constructor(private readonly registry: DescriptorRegistry) {}

  private resolve(typeName: string): MessageDescriptor | undefined {
    const name = typeName.startsWith('.') ? typeName.slice(1) : typeName;
    const exact = this.registry.get(name);
    if (exact) return exact;
    for (const [full, d] of this.registry) if (full.endsWith(`.${name}`)) return d;
    return undefined;
  }

  private plan(message: MessageDescriptor): Map<number, FieldPlan> {
    let p = this.plans.get(message);
    if (p === undefined) {
      p = new Map(
        (message.field ?? []).map((f) => [
          f.number,
          { field: f, expected: WIRE_TYPE_OF[f.type], repeated: f.label === 'LABEL_REPEATED', sub: undefined },
        ]),
      );
      this.plans.set(message, p);
    }
    return p;
  }

  /** Reads a varint of up to 10 bytes without truncating it: a number when it has at most four bytes
   *  (below 2^28, exact), else a bigint; the caller checks the range. */
  private varint(buf: Buffer, end: number): number | bigint {
    let small = 0;
    for (let i = 0; i < SMALL_VARINT_BYTES; i++) {
      if (this.pos >= end) throw new WalkError('truncated varint');
      const b = buf[this.pos++]!;
      small += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return small;
    }
    let result = BigInt(small);
    let shift = BigInt(7 * SMALL_VARINT_BYTES);
    for (let i = SMALL_VARINT_BYTES; i < 10; i++) {
      if (this.pos >= end) throw new WalkError('truncated varint');
      const b = buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
    throw new WalkError('varint longer than 10 bytes');
  }

  /** A reason when buf[start, end) is not a strictly valid encoding of `message`; null when fine. */
  check(buf: Buffer, start: number, end: number, message: MessageDescriptor, path: string, depth: number): string | null {
    if (depth > MAX_DEPTH) return `${path}: nested more than ${MAX_DEPTH} levels deep`;
    const plan = this.plan(message);
    this.pos = start;
    while (this.pos < end) {
      const tag = this.varint(buf, end);
      if (typeof tag === 'bigint' && tag > U32) return `${path}: malformed field tag`;
      const t = Number(tag);
      const fieldNumber = Math.floor(t / 8);
      const wireType = t % 8;
      const fp = plan.get(fieldNumber);
      if (!fp) return `${depth === 0 ? (message.name ?? 'request') : path}: unknown field number ${fieldNumber}`;
      const field = fp.field;
      const name = depth === 0 ? field.name : `${path}.${field.name}`;
      const expected = fp.expected;
      // A repeated scalar may arrive packed (one length-delimited run of values).
      const packed = fp.repeated && wireType === 2 && expected !== undefined && expected !== 2;
      if (expected !== undefined && expected !== wireType && !packed) {
        return `${name}: wrong wire type ${wireType} for a ${typeLabel(field.type)} field`;
      }
      switch (wireType) {
        case 0: {
          const v = this.varint(buf, end);
          if (!fits(field.type, v)) return `${name}: varint ${v} overflows a ${typeLabel(field.type)} field`;
          break;
        }
        case 1:
          this.pos += 8;
          break;
        case 5:
          this.pos += 4;
          break;
        case 2: {
          const len = this.varint(buf, end);
          if (len > end - this.pos) return `${name}: truncated value`;
          const from = this.pos;
          const to = from + Number(len);
          this.pos = to;
          if (packed) {
            const problem = this.packed(buf, from, to, field, expected!, name);
            if (problem) return problem;
            this.pos = to;
          } else if (field.type === 'TYPE_STRING') {
            if (!isUtf8(buf.subarray(from, to))) return `${name}: not valid UTF-8`;
          } else if (field.type === 'TYPE_MESSAGE') {
            if (fp.sub === undefined) fp.sub = this.resolve(field.typeName ?? '') ?? null;
            if (!fp.sub) return `${name}: unknown message type ${field.typeName ?? '?'}`;
            const problem = this.check(buf, from, to, fp.sub, name, depth + 1);
            if (problem) return problem;
            this.pos = to;
          }
          break;
        }
        default:
          return `${name}: unsupported wire type ${wireType}`;
      }
      if (this.pos > end) return `${name}: truncated value`;
    }
    return null;
  }

  private packed(buf: Buffer, from: number, to: number, field: FieldDescriptor, wireType: number, name: string): string | null {
    if (wireType === 1 || wireType === 5) return (to - from) % (wireType === 1 ? 8 : 4) === 0 ? null : `${name}: truncated packed value`;
    this.pos = from;
    while (this.pos < to) {
      const v = this.varint(buf, to);
      if (!fits(field.type, v)) return `${name}: varint ${v} overflows a ${typeLabel(field.type)} field`;
    }
    return null;
  }
}

/** varintFits for the walker's number-or-bigint varints: a small one fits every type but bool. */
function fits(type: string, v: number | bigint): boolean {
  if (typeof v === 'number') return type !== 'TYPE_BOOL' || v <= 1;
  return varintFits(type, v);
}

/** One walker per registry: its field plans are built once and reused by every message. */
const walkers = new WeakMap<DescriptorRegistry, Walker>();

/** The reason `buf` is not a strictly valid `message`, or null. Exported for unit tests. */
export function strictProblem(buf: Buffer, message: MessageDescriptor, registry: DescriptorRegistry): string | null {
  let walker = walkers.get(registry);
  if (walker === undefined) walkers.set(registry, (walker = new Walker(registry)));
  try {
    return walker.check(buf, 0, buf.length, message, '', 0);
  } catch (err) {
    return `${message.name ?? 'request'}: malformed message (${(err as Error).message})`;
  }
}

/** The reason `buf` is not a strictly valid `message` held in field `path` of an outer message (the
 *  request inside a Lock/Stream or Forward envelope, call-bodies.ts), with the paths the walk of the whole
 *  outer message gives (`acquire.ttl_ms: ...`, `acquire: unknown field number 9`), or null. */
export function strictProblemWithin(buf: Buffer, message: MessageDescriptor, registry: DescriptorRegistry, path: string): string | null {
  let walker = walkers.get(registry);
  if (walker === undefined) walkers.set(registry, (walker = new Walker(registry)));
  try {
    return walker.check(buf, 0, buf.length, message, path, 1);
  } catch (err) {
    return `${path}: malformed message (${(err as Error).message})`;
  }
}

/** The marker a strict deserializer returns for a refused request; handlers answer it INVALID_ARGUMENT. */
export interface InvalidRequest {
  __invalid: string;
}

export function invalidReason(request: unknown): string | undefined {
  const r = (request as Partial<InvalidRequest> | null | undefined)?.__invalid;
  return typeof r === 'string' ? r : undefined;
}

/** A copy of `service` whose request deserializers refuse unknown fields, wrong wire types, overflowing
 *  varints and invalid UTF-8, at every nesting level (methods with their own strict decoder as they are). */
export function strictRequestDeserializers<S extends grpc.ServiceDefinition>(service: S, registry: DescriptorRegistry): S {
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(service)) {
    const def = method as grpc.MethodDefinition<unknown, unknown> & { requestType?: { type?: MessageDescriptor }; ownStrictDecoder?: true };
    // A method with its own strict decoder (wire/load.ts MethodCodec: the Raft stream) is not walked twice.
    if (def.ownStrictDecoder === true) {
      out[name] = def;
      continue;
    }
    const message: MessageDescriptor = def.requestType?.type ?? { name: 'request', field: [] };
    const original = def.requestDeserialize;
    out[name] = {
      ...def,
      requestDeserialize: (buf: Buffer) => {
        const problem = strictProblem(buf, message, registry);
        if (problem) return { __invalid: problem } satisfies InvalidRequest;
        try {
          return original(buf);
        } catch (err) {
          return { __invalid: `${message.name ?? 'request'}: cannot decode (${(err as Error).message})` } satisfies InvalidRequest;
        }
      },
    };
  }
  return out as S;
}

function invalidStatus(details: string): grpc.ServiceError {
  const e = new Error(details) as grpc.ServiceError;
  e.code = grpc.status.INVALID_ARGUMENT;
  e.details = details;
  e.metadata = new grpc.Metadata();
  return e;
}

/**
 * `service` behind the strict decoder, with its unary and server-streaming handlers answering a refused
 * request INVALID_ARGUMENT before they run — for services whose handlers we do not write (health). A
 * client-streaming or bidi handler sees the marker in its 'data' events and must check invalidReason itself.
 */
export function addStrictService(
  server: grpc.Server,
  service: grpc.ServiceDefinition,
  handlers: grpc.UntypedServiceImplementation,
  registry: DescriptorRegistry,
): void {
  const wrapped: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(service)) {
    const handler = handlers[name] ?? handlers[(method as { originalName?: string }).originalName ?? ''];
    if (!handler) continue;
    if (!method.requestStream && !method.responseStream) {
      const h = handler as grpc.handleUnaryCall<unknown, unknown>;
      wrapped[name] = ((call, cb) => {
        const bad = invalidReason(call.request);
        if (bad !== undefined) cb(invalidStatus(bad));
        else h(call, cb);
      }) as grpc.handleUnaryCall<unknown, unknown>;
    } else if (!method.requestStream && method.responseStream) {
      const h = handler as grpc.handleServerStreamingCall<unknown, unknown>;
      wrapped[name] = ((call) => {
        const bad = invalidReason(call.request);
        if (bad !== undefined) call.emit('error', invalidStatus(bad));
        else h(call);
      }) as grpc.handleServerStreamingCall<unknown, unknown>;
    } else {
      wrapped[name] = handler;
    }
  }
  server.addService(strictRequestDeserializers(service, registry), wrapped);
}
