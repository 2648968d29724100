import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProtoRoot, packageDefinition, protoRoot } from '../../../src/wire/load.js';
import { lockGrpcService, type LockHandlers, WATCH_KINDS } from '../../../src/wire/lock.js';
import { clusterGrpcService, ROLES } from '../../../src/wire/cluster.js';
import { ENTRY_KINDS, raftGrpcService, type RaftHandlers } from '../../../src/wire/raft.js';
import { encodeRaftFrame } from '../../../src/wire/raft-encode.js';
import { ENTRY_KIND_NUMBER, RAFT_FIELD_TABLES } from '../../../src/wire/raft-fields.js';
import { REFUSAL_REASONS } from '../../../src/lock/types.js';
import type { Message } from '../../../src/raft/core/types.js';
import { WIRE_SAMPLES } from './wire-samples.js';

// ---- the loaded descriptors, as proto-loader hands them out (DescriptorProto objects) ----

interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface EnumDescriptor {
  name: string;
  value: { name: string; number: number }[];
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  oneofDecl: { name: string }[];
  enumType: EnumDescriptor[];
  nestedType: MessageDescriptor[];
}
interface MethodDef {
  requestStream: boolean;
  responseStream: boolean;
  requestSerialize(v: unknown): Buffer;
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(v: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
  requestType: { type: MessageDescriptor };
  responseType: { type: MessageDescriptor };
}

const defs = packageDefinition() as unknown as Record<string, Record<string, unknown>>;

function packageOf(fullName: string): string {
  return fullName.slice(0, fullName.lastIndexOf('.'));
}

const MESSAGE_NAMES = Object.keys(defs).filter((k) => defs[k]?.['format'] === 'Protocol Buffer 3 DescriptorProto');

function messageDescriptor(fullName: string): MessageDescriptor {
  const def = defs[fullName];
  if (def?.['format'] !== 'Protocol Buffer 3 DescriptorProto') throw new Error(`${fullName} is not a message`);
  return def['type'] as MessageDescriptor;
}

function enumValues(ownerFullName: string, typeName: string): string[] {
  const name = typeName.replace(/^\./, '');
  const nested = messageDescriptor(ownerFullName).enumType.find((e) => e.name === name);
  if (nested) return nested.value.map((v) => v.name);
  for (const candidate of [`${packageOf(ownerFullName)}.${name}`, name]) {
    const def = defs[candidate];
    if (def?.['format'] === 'Protocol Buffer 3 EnumDescriptorProto') {
      return (def['type'] as EnumDescriptor).value.map((v) => v.name);
    }
  }
  throw new Error(`cannot resolve enum ${typeName} from ${ownerFullName}`);
}

function resolveMessage(ownerFullName: string, typeName: string): string {
  const name = typeName.replace(/^\./, '');
  for (const candidate of [`${ownerFullName}.${name}`, `${packageOf(ownerFullName)}.${name}`, name]) {
    if (defs[candidate]?.['format'] === 'Protocol Buffer 3 DescriptorProto') return candidate;
  }
  throw new Error(`cannot resolve message ${typeName} from ${ownerFullName}`);
}

function method(service: string, name: string): MethodDef {
  const def = defs[service]?.[name] as MethodDef | undefined;
  if (!def) throw new Error(`no method ${service}/${name}`);
  return def;
}

// ---- the walk: every key of every sample against the descriptor, recording which fields were seen ----

class Walk {
  readonly problems: string[] = [];
  readonly seen = new Map<string, Set<string>>();

  message(fullName: string, value: unknown, path: string): void {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.problems.push(`${path}: expected an object for ${fullName}`);
      return;
    }
    const desc = messageDescriptor(fullName);
    const seen = this.seen.get(fullName) ?? new Set<string>();
    this.seen.set(fullName, seen);
    const oneofs = new Set(desc.oneofDecl.map((o) => o.name));
    const fields = new Map(desc.field.map((f) => [f.name, f]));
    for (const [key, v] of Object.entries(value)) {
      seen.add(key);
      if (oneofs.has(key)) {
        if (typeof v !== 'string' || !fields.has(v) || !(v in value)) {
          this.problems.push(`${path}.${key}: oneof marker must name a set member, got ${String(v)}`);
        }
        continue;
      }
      const field = fields.get(key);
      if (!field) {
        this.problems.push(`${path}.${key}: not a field of ${fullName} in the .proto`);
        continue;
      }
      if (field.label === 'LABEL_REPEATED') {
        if (!Array.isArray(v)) this.problems.push(`${path}.${key}: repeated field must be an array`);
        else v.forEach((item, i) => this.scalar(fullName, field, item, `${path}.${key}[${i}]`));
      } else {
        this.scalar(fullName, field, v, `${path}.${key}`);
      }
    }
  }

  private scalar(owner: string, field: FieldDescriptor, v: unknown, path: string): void {
    const bad = (what: string): void => {
      this.problems.push(`${path}: ${field.type} must be ${what}, got ${typeof v} ${String(v)}`);
    };
    switch (field.type) {
      case 'TYPE_STRING':
        if (typeof v !== 'string') bad('a string');
        break;
      case 'TYPE_BOOL':
        if (typeof v !== 'boolean') bad('a boolean');
        break;
      case 'TYPE_INT64':
      case 'TYPE_SINT64':
      case 'TYPE_SFIXED64':
        if (typeof v !== 'string' || !/^-?\d+$/.test(v)) bad('a decimal string');
        break;
      case 'TYPE_UINT64':
      case 'TYPE_FIXED64':
        if (typeof v !== 'string' || !/^\d+$/.test(v)) bad('an unsigned decimal string');
        break;
      case 'TYPE_INT32':
      case 'TYPE_SINT32':
      case 'TYPE_UINT32':
      case 'TYPE_FIXED32':
      case 'TYPE_SFIXED32':
        if (typeof v !== 'number' || !Number.isInteger(v)) bad('an integer number');
        break;
      case 'TYPE_BYTES':
        if (!Buffer.isBuffer(v)) bad('a Buffer');
        break;
      case 'TYPE_ENUM':
        if (typeof v !== 'string' || !enumValues(owner, field.typeName).includes(v)) bad('an enum value name');
        break;
      case 'TYPE_MESSAGE':
        if (v !== null) this.message(resolveMessage(owner, field.typeName), v, path);
        break;
      default:
        this.problems.push(`${path}: field type ${field.type} has no check here; extend the test`);
    }
  }
}

describe('proto files and loader', () => {
  it('finds the proto root from src/ and from a compiled dist/ layout', () => {
    const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
    expect(protoRoot()).toBe(join(repoRoot, 'proto'));
    expect(findProtoRoot(join(repoRoot, 'dist', 'src', 'wire'))).toBe(join(repoRoot, 'proto'));
    const elsewhere = mkdtempSync(join(tmpdir(), 'leasehold-noproto-'));
    expect(() => findProtoRoot(elsewhere)).toThrow(/cannot find proto\/leasehold\/v1\/lock\.proto/);
  });

  it('keeps the public contract of SPEC.md: services, methods and their streaming shape', () => {
    const shape = (service: grpc.ServiceDefinition) =>
      Object.fromEntries(
        Object.entries(service).map(([name, m]) => [name, `${m.requestStream ? 'stream ' : ''}->${m.responseStream ? ' stream' : ''}`]),
      );
    expect(shape(lockGrpcService.definition())).toEqual({
      Acquire: '->',
      Renew: '->',
      Release: '->',
      Get: '->',
      Stream: 'stream -> stream',
      OpenSession: '->',
      RenewSession: '->',
      CloseSession: '->',
      Watch: '-> stream',
      List: '->',
      Revoke: '->',
    });
    expect(shape(clusterGrpcService.definition())).toEqual({
      Status: '->',
      AddMember: '->',
      PromoteMember: '->',
      RemoveMember: '->',
      TransferLeader: '->',
      Snapshot: '-> stream',
    });
    expect(shape(raftGrpcService.definition())).toEqual({ Stream: 'stream ->', Forward: 'stream -> stream' });
    expect(lockGrpcService.definition().Acquire.path).toBe('/leasehold.v1.Lock/Acquire');
    expect(clusterGrpcService.definition().Status.path).toBe('/leasehold.v1.Cluster/Status');
    expect(raftGrpcService.definition().Stream.path).toBe('/leasehold.v1.Raft/Stream');
  });

  it('keeps the field names, numbers and types of the public messages', () => {
    const fields = (name: string) =>
      messageDescriptor(name).field.map((f) => `${f.name}=${(f as unknown as { number: number }).number}:${f.type.slice(5).toLowerCase()}`);
    expect(fields('leasehold.v1.AcquireRequest')).toEqual([
      'key=1:string',
      'owner=2:string',
      'ttl_ms=3:int64',
      'wait_ms=4:int64',
      'request_id=5:string',
      'lock_delay_ms=6:int64',
      'value=7:bytes',
      'session_id=8:uint64',
      'limit=9:uint32',
      'shared=10:bool',
    ]);
    // SPEC "Sessions".
    expect(fields('leasehold.v1.OpenSessionRequest')).toEqual([
      'owner=1:string',
      'ttl_ms=2:int64',
      'request_id=3:string',
      'lock_delay_ms=4:int64',
    ]);
    expect(fields('leasehold.v1.OpenSessionResponse')).toEqual(['session_id=1:uint64', 'ttl_ms=2:int64', 'expires_at_ms=3:int64']);
    expect(fields('leasehold.v1.RenewSessionRequest')).toEqual(['session_id=1:uint64', 'request_id=2:string', 'owner=3:string']);
    expect(fields('leasehold.v1.RenewSessionResponse')).toEqual([
      'renewed=1:bool',
      'ttl_ms=2:int64',
      'expires_at_ms=3:int64',
      'reason=4:enum',
    ]);
    expect(fields('leasehold.v1.CloseSessionRequest')).toEqual(['session_id=1:uint64', 'request_id=2:string', 'owner=3:string']);
    expect(fields('leasehold.v1.CloseSessionResponse')).toEqual(['closed=1:bool', 'released=2:string', 'reason=3:enum']);
    expect(fields('leasehold.v1.AcquireResponse')).toEqual([
      'acquired=1:bool',
      'token=2:uint64',
      'ttl_ms=3:int64',
      'expires_at_ms=4:int64',
      'holder_owner=5:string',
      'holder_ttl_ms=6:int64',
      'delay_ms_left=7:int64',
    ]);
    expect(fields('leasehold.v1.RenewRequest')).toEqual([
      'key=1:string',
      'owner=2:string',
      'token=3:uint64',
      'ttl_ms=4:int64',
      'request_id=5:string',
    ]);
    expect(fields('leasehold.v1.RenewResponse')).toEqual(['renewed=1:bool', 'ttl_ms=2:int64', 'expires_at_ms=3:int64', 'reason=4:enum']);
    expect(fields('leasehold.v1.ReleaseRequest')).toEqual(['key=1:string', 'owner=2:string', 'token=3:uint64', 'request_id=4:string']);
    expect(fields('leasehold.v1.ReleaseResponse')).toEqual(['released=1:bool', 'reason=2:enum']);
    expect(fields('leasehold.v1.GetRequest')).toEqual(['key=1:string']);
    // SPEC "Revoke".
    expect(fields('leasehold.v1.RevokeRequest')).toEqual([
      'key=1:string',
      'token=2:uint64',
      'reason=3:string',
      'request_id=4:string',
      'owner=5:string',
    ]);
    expect(fields('leasehold.v1.RevokeResponse')).toEqual(['revoked=1:uint64']);
    // SPEC "List".
    expect(fields('leasehold.v1.ListRequest')).toEqual(['prefix=1:string', 'limit=2:uint32', 'page_token=3:string']);
    expect(fields('leasehold.v1.ListResponse')).toEqual(['locks=1:message', 'next_page_token=2:string', 'index=3:uint64']);
    expect(fields('leasehold.v1.ListedLock')).toEqual(['key=1:string', 'holders=2:message', 'waiters=3:uint32', 'last_token=4:uint64']);
    // SPEC "Watch".
    expect(fields('leasehold.v1.WatchRequest')).toEqual([
      'key=1:string',
      'prefix=2:string',
      'after_index=3:uint64',
      'include_renewals=4:bool',
    ]);
    expect(fields('leasehold.v1.WatchEvent')).toEqual([
      'index=1:uint64',
      'key=2:string',
      'kind=3:enum',
      'owner=4:string',
      'token=5:uint64',
      'session_id=6:uint64',
      'value=7:bytes',
      'shared=8:bool',
    ]);
    expect(fields('leasehold.v1.LockCall')).toEqual([
      'call_id=1:uint64',
      'timeout_ms=2:uint32',
      'cancel=3:bool',
      'acquire=10:message',
      'renew=11:message',
      'release=12:message',
      'get=13:message',
      'open_session=14:message',
      'renew_session=15:message',
      'close_session=16:message',
    ]);
    expect(fields('leasehold.v1.LockAnswer')).toEqual([
      'call_id=1:uint64',
      'code=2:int32',
      'details=3:string',
      'leader=4:string',
      'acquire=10:message',
      'renew=11:message',
      'release=12:message',
      'get=13:message',
      'open_session=14:message',
      'renew_session=15:message',
      'close_session=16:message',
    ]);
    expect(fields('leasehold.v1.GetResponse')).toEqual([
      'held=1:bool',
      'owner=2:string',
      'token=3:uint64',
      'ttl_ms=4:int64',
      'expires_at_ms=5:int64',
      'last_token=6:uint64',
      'waiters=7:uint32',
      'holders=8:message',
      'index=9:uint64',
      'limit=10:uint32',
    ]);
    expect(fields('leasehold.v1.StatusResponse')).toEqual([
      'node_id=1:string',
      'role=2:enum',
      'term=3:uint64',
      'leader_id=4:string',
      'commit_index=5:uint64',
      'applied_index=6:uint64',
      'members=7:message',
      'cluster_id=8:string',
      'serving=9:bool',
      'health=10:string',
      'cluster_level=11:uint32',
      'build_level=12:uint32',
    ]);
    // SPEC "Membership".
    expect(fields('leasehold.v1.Holder')).toEqual([
      'owner=1:string',
      'token=2:uint64',
      'ttl_ms=3:int64',
      'expires_at_ms=4:int64',
      'shared=5:bool',
      'session_id=6:uint64',
      'value=7:bytes',
    ]);
    expect(fields('leasehold.v1.Member')).toEqual([
      'id=1:string',
      'address=2:string',
      'voter=3:bool',
      'match_index=4:uint64',
      'learner=5:bool',
      'seen=6:bool',
      'ran=7:bool',
    ]);
    expect(fields('leasehold.v1.AddMemberRequest')).toEqual(['id=1:string', 'address=2:string', 'learner=3:bool']);
    expect(fields('leasehold.v1.PromoteMemberRequest')).toEqual(['id=1:string']);
    expect(fields('leasehold.v1.RemoveMemberRequest')).toEqual(['id=1:string']);
    expect(fields('leasehold.v1.MembersResponse')).toEqual(['members=1:message']);
    expect(fields('leasehold.v1.TransferLeaderRequest')).toEqual(['to_id=1:string']);
    expect(fields('leasehold.v1.TransferLeaderResponse')).toEqual(['leader_id=1:string', 'term=2:uint64']);
    expect(fields('leasehold.v1.SnapshotRequest')).toEqual(['pace_percent=1:uint32']);
    expect(fields('leasehold.v1.SnapshotChunk')).toEqual(['data=1:bytes']);
  });

  it("the hand-written Raft codec's field numbers and entry kinds match raft.proto (raft-fields.ts)", () => {
    for (const [message, table] of Object.entries(RAFT_FIELD_TABLES)) {
      const fields = Object.fromEntries(
        messageDescriptor(`leasehold.v1.${message}`).field.map((f) => [f.name, (f as unknown as { number: number }).number]),
      );
      expect(table, message).toStrictEqual(fields);
    }
    // Every message raft.proto's RaftMessage reaches has its table.
    expect(Object.keys(RAFT_FIELD_TABLES).sort()).toEqual(
      [
        'RaftMessage',
        'Entry',
        'ConfState',
        'PeerAddress',
        'SnapshotMeta',
        'RequestVote',
        'RequestVoteResponse',
        'AppendEntries',
        'AppendEntriesResponse',
        'InstallSnapshot',
        'InstallSnapshotResponse',
        'TimeoutNow',
        'ReadIndexRequest',
        'ReadIndexResponse',
      ].sort(),
    );
    expect(Object.entries(ENTRY_KIND_NUMBER).map(([kind, n]) => [ENTRY_KINDS[n], kind])).toEqual([
      ['ENTRY_KIND_NORMAL', 'normal'],
      ['ENTRY_KIND_NOOP', 'noop'],
      ['ENTRY_KIND_CONFIG', 'config'],
    ]);
  });

  it('the TypeScript enum value lists match the .proto enums, name and number', () => {
    const values = (fullName: string) => {
      const def = defs[fullName];
      expect(def?.['format']).toBe('Protocol Buffer 3 EnumDescriptorProto');
      return (def!['type'] as EnumDescriptor).value.map((v) => [v.name, v.number]);
    };
    expect(values('leasehold.v1.Reason')).toEqual(REFUSAL_REASONS.map((n, i) => [n, i]));
    expect(values('leasehold.v1.Role')).toEqual(ROLES.map((n, i) => [n, i]));
    expect(values('leasehold.v1.EntryKind')).toEqual(ENTRY_KINDS.map((n, i) => [n, i]));
    // Every enum in the package has a TypeScript list checked above.
    const enums = Object.keys(defs).filter((k) => defs[k]?.['format'] === 'Protocol Buffer 3 EnumDescriptorProto');
    expect(enums.sort()).toEqual(['leasehold.v1.EntryKind', 'leasehold.v1.Reason', 'leasehold.v1.Role']);
    // Nested enums (their value names would clash in the package scope), each with its list.
    const nested = (message: string, name: string) =>
      messageDescriptor(message)
        .enumType.find((e) => e.name === name)!
        .value.map((v) => [v.name, v.number]);
    expect(nested('leasehold.v1.WatchEvent', 'Kind')).toEqual([['KIND_UNSPECIFIED', 0], ...WATCH_KINDS.map((n, i) => [n, i + 1])]);
    const withNested = MESSAGE_NAMES.filter((n) => messageDescriptor(n).enumType.length > 0);
    expect(withNested).toEqual(['leasehold.v1.WatchEvent']);
  });

  it('every field of every message has a counterpart in the TypeScript interfaces (samples walk)', () => {
    const walk = new Walk();
    WIRE_SAMPLES.forEach((s, i) => {
      const m = method(s.service, s.method);
      const type = s.side === 'request' ? m.requestType : m.responseType;
      walk.message(`${packageOf(s.service)}.${type.type.name}`, s.value, `sample[${i}] ${s.service}/${s.method} ${s.side}`);
    });
    expect(walk.problems).toEqual([]);
    const uncovered: string[] = [];
    for (const name of MESSAGE_NAMES) {
      const desc = messageDescriptor(name);
      const seen = walk.seen.get(name);
      if (!seen) {
        uncovered.push(`${name}: no sample reaches this message`);
        continue;
      }
      for (const f of [...desc.field.map((x) => x.name), ...desc.oneofDecl.map((o) => o.name)]) {
        if (!seen.has(f)) uncovered.push(`${name}.${f}: no sample sets this field`);
      }
    }
    expect(uncovered).toEqual([]);
  });

  it('every sample survives real protobuf serialization unchanged (the interfaces are the decoded shape)', () => {
    for (const s of WIRE_SAMPLES) {
      const m = method(s.service, s.method);
      const bytes = s.side === 'request' ? m.requestSerialize(s.value) : m.responseSerialize(s.value);
      expect(Buffer.isBuffer(bytes)).toBe(true);
      const back = s.side === 'request' ? m.requestDeserialize(bytes) : m.responseDeserialize(bytes);
      expect(back, `${s.service}/${s.method} ${s.side}`).toStrictEqual(s.value);
    }
  });

  it('uint64 and int64 extremes cross the wire exactly (longs: String)', () => {
    const m = method('leasehold.v1.Lock', 'Acquire');
    const out = m.responseDeserialize(m.responseSerialize({ token: '18446744073709551615', expires_at_ms: '-9223372036854775808' }));
    expect(out).toMatchObject({ token: '18446744073709551615', expires_at_ms: '-9223372036854775808' });
  });

  it('an absent field decodes as its proto3 default, an unknown field is skipped', () => {
    const m = method('leasehold.v1.Lock', 'Get');
    expect(m.responseDeserialize(Buffer.alloc(0))).toStrictEqual({
      held: false,
      owner: '',
      token: '0',
      ttl_ms: '0',
      expires_at_ms: '0',
      last_token: '0',
      waiters: 0,
      holders: [],
      index: '0',
      limit: 0,
    });
    // field 15, varint 1 (tag 0x78): unknown to this build
    expect(method('leasehold.v1.Lock', 'Get').requestDeserialize(Buffer.from([0x0a, 0x01, 0x6b, 0x78, 0x01]))).toStrictEqual({ key: 'k' });
  });

  it('reflection descriptors keep the .proto field names (keepCase), so grpcurl users can type ttl_ms', () => {
    const blob = Buffer.concat(defs['leasehold.v1.AcquireRequest']!['fileDescriptorProtos'] as Buffer[]);
    expect(blob.includes('ttl_ms')).toBe(true);
    expect(blob.includes('ttlMs')).toBe(false);
  });
});

describe('generated clients and service definitions over a real gRPC connection', () => {
  let server: grpc.Server;
  let address = '';
  const received: Message[] = [];

  beforeAll(async () => {
    server = new grpc.Server();
    const lock: LockHandlers = {
      Acquire: (call, cb) =>
        cb(null, { acquired: true, token: '18446744073709551615', ttl_ms: call.request.ttl_ms, holder_owner: call.request.owner }),
      Renew: (_call, cb) => cb(null, { renewed: false, reason: 'WRONG_TOKEN' }),
      Release: (_call, cb) => cb(null, { released: true }),
      Get: (_call, cb) => cb({ code: grpc.status.UNAVAILABLE, details: 'no leader' }),
      OpenSession: (_call, cb) => cb(null, { session_id: '7', ttl_ms: '1000' }),
      RenewSession: (_call, cb) => cb(null, { renewed: true }),
      CloseSession: (_call, cb) => cb(null, { closed: true, released: ['a'] }),
      Stream: (call) => call.end(),
      Watch: (call) => call.end(),
      List: (_call, cb) => cb(null, { locks: [] }),
      Revoke: (_call, cb) => cb(null, { revoked: [] }),
    };
    const raft: RaftHandlers = {
      Stream: (call, cb) => {
        let count = 0;
        call.on('data', (frame) => {
          if ('__invalid' in frame) throw new Error(frame.__invalid);
          received.push(...frame.messages);
          count += frame.messages.length;
        });
        call.on('end', () => cb(null, { received: String(count) }));
      },
      Forward: (call) => call.end(),
    };
    server.addService(lockGrpcService.definition(), lock);
    server.addService(raftGrpcService.definition(), raft);
    const port = await new Promise<number>((res, rej) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? rej(err) : res(p))),
    );
    address = `127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await new Promise<void>((res) => server.tryShutdown(() => res()));
  });

  it('Lock: typed unary calls carry uint64 tokens and enums exactly; errors keep their status code', async () => {
    const client = lockGrpcService.client(address, grpc.credentials.createInsecure());
    try {
      const acquired = await new Promise((res, rej) =>
        client.acquire({ key: 'k', owner: 'o', ttl_ms: '5000' }, (err, value) => (err ? rej(err) : res(value))),
      );
      expect(acquired).toStrictEqual({
        acquired: true,
        token: '18446744073709551615',
        ttl_ms: '5000',
        expires_at_ms: '0',
        holder_owner: 'o',
        holder_ttl_ms: '0',
        delay_ms_left: '0',
      });
      const renewed = await new Promise((res, rej) =>
        client.Renew({ key: 'k', owner: 'o', token: '1', ttl_ms: '5000' }, (err, value) => (err ? rej(err) : res(value))),
      );
      expect(renewed).toMatchObject({ renewed: false, reason: 'WRONG_TOKEN' });
      const failure = await new Promise<grpc.ServiceError | null>((res) => client.get({ key: 'k' }, (err) => res(err)));
      expect(failure?.code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });

  it('Raft: a client stream delivers core messages in order through the hand-written codec', async () => {
    const client = raftGrpcService.client(address, grpc.credentials.createInsecure());
    const sent: Message[] = [
      { type: 'RequestVote', from: 'n1', to: 'n2', term: 3, preVote: false, lastLogIndex: 9, lastLogTerm: 2, transfer: false },
      {
        type: 'AppendEntries',
        from: 'n1',
        to: 'n2',
        term: 3,
        prevLogIndex: 9,
        prevLogTerm: 2,
        leaderCommit: 9,
        round: 1,
        entries: [{ index: 10, term: 3, kind: 'noop', data: new Uint8Array(0) }],
      },
      { type: 'TimeoutNow', from: 'n1', to: 'n2', term: 3 },
    ];
    try {
      const summary = await new Promise((res, rej) => {
        const stream = client.stream((err, value) => (err ? rej(err) : res(value)));
        stream.write(encodeRaftFrame(sent.slice(0, 1), 'c-1', 0));
        stream.write(encodeRaftFrame(sent.slice(1), 'c-1', 6)); // a batch
        stream.end();
      });
      expect(summary).toStrictEqual({ received: '3' });
      expect(received).toStrictEqual(sent);
    } finally {
      client.close();
    }
  });
});
