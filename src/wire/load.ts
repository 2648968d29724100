// The .proto files under proto/leasehold/v1, loaded at run time with @grpc/proto-loader — on first use, not
// at import: a program that imports the client but never dials (a CLI printing --help, a test that only
// checks arguments) reads no file. The hand-written TypeScript shapes of the messages live beside each
// service (lock.ts, cluster.ts, raft.ts); test/unit/wire/proto.test.ts walks the loaded descriptors and
// checks them field by field, so they cannot drift from the .proto files silently.
//
// Loader options, chosen once for every caller (server, client, peer transport, reflection):
// - keepCase: true: field names stay as written in the .proto (`ttl_ms`, `request_vote`). proto-loader
//   also renames the fields inside the descriptors it hands out; with camelCase, server reflection would
//   advertise `ttlMs`, and grpcurl users typing `{"ttl_ms": 5000}` would be refused. One truth, snake_case.
// - longs: String: every 64-bit field is a decimal string, so a uint64 fencing token never rounds
//   through a lossy `number`. Use the scalars.ts helpers to convert.
// - enums: String: enum fields are their value names ('EXPIRED'). A value this build does not know
//   (from a newer peer) decodes as its number, so validate before trusting it.
// - defaults: true: every scalar and repeated field is present after decoding; an absent sub-message
//   decodes as null; members of a oneof are never defaulted.
// - oneofs: true: a decoded message carries a virtual field named after each set oneof, holding the name
//   of the member that is set (RaftMessage.body === 'append_entries').
// - bytes: left at the default: bytes fields decode as Buffer (a view into the received buffer).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { WireInput } from './scalars.js';

export const LEASEHOLD_PROTO_FILES = ['leasehold/v1/lock.proto', 'leasehold/v1/cluster.proto', 'leasehold/v1/raft.proto'] as const;

export const LOADER_OPTIONS: Readonly<protoLoader.Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/**
 * The proto/ directory of the package: the nearest ancestor of this module that holds
 * proto/leasehold/v1/lock.proto. Works from src/wire (tests, tsx) and dist/src/wire (built).
 */
export function findProtoRoot(fromDir: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = resolve(fromDir);
  for (;;) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, LEASEHOLD_PROTO_FILES[0]))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(
        `leasehold: cannot find proto/${LEASEHOLD_PROTO_FILES[0]} in ${fromDir} or any parent directory; ` +
          'the package must ship its proto/ directory next to src/ (or dist/)',
      );
    }
    dir = parent;
  }
}

let loaded: { root: string; definition: protoLoader.PackageDefinition } | undefined;

function load(): { root: string; definition: protoLoader.PackageDefinition } {
  if (loaded === undefined) {
    const root = findProtoRoot();
    const definition = protoLoader.loadSync([...LEASEHOLD_PROTO_FILES], { ...LOADER_OPTIONS, includeDirs: [root] });
    loaded = { root, definition };
  }
  return loaded;
}

/** The proto/ directory this process loaded its definitions from (found, and the files read, on first call). */
export function protoRoot(): string {
  return load().root;
}

/**
 * Every service, message and enum of leasehold.v1, read from proto/ on the first call and kept. Each entry
 * also carries `fileDescriptorProtos` (serialized FileDescriptorProto with the .proto field names), which
 * is what server reflection answers with: `new ReflectionService(packageDefinition())` from @grpc/reflection.
 */
export function packageDefinition(): protoLoader.PackageDefinition {
  return load().definition;
}

// ---------------------------------------------------------------------------------------------------
// Generated clients: the method shapes grpc-js gives a client made from a service definition
// ---------------------------------------------------------------------------------------------------

export type UnaryMethod<Req, Res> = {
  (request: WireInput<Req>, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (request: WireInput<Req>, metadata: grpc.Metadata, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (request: WireInput<Req>, options: Partial<grpc.CallOptions>, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (
    request: WireInput<Req>,
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: grpc.requestCallback<Res>,
  ): grpc.ClientUnaryCall;
};

export type ClientStreamingMethod<Req, Res> = {
  (callback: grpc.requestCallback<Res>): grpc.ClientWritableStream<WireInput<Req>>;
  (metadata: grpc.Metadata, callback: grpc.requestCallback<Res>): grpc.ClientWritableStream<WireInput<Req>>;
  (options: Partial<grpc.CallOptions>, callback: grpc.requestCallback<Res>): grpc.ClientWritableStream<WireInput<Req>>;
  (
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: grpc.requestCallback<Res>,
  ): grpc.ClientWritableStream<WireInput<Req>>;
};

/** A generated client class: `new C('127.0.0.1:7001', grpc.credentials.createInsecure())`. */
interface ClientConstructor<C extends grpc.Client, H extends grpc.UntypedServiceImplementation> {
  new (address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>): C;
  /** For `server.addService(C.service, handlers)`. */
  service: grpc.ServiceDefinition<H>;
}

/** One service of leasehold.v1 as grpc-js sees it: its client class and its service definition, both
 *  made from the loaded proto files on first use. */
export interface Service<C extends grpc.Client, H extends grpc.UntypedServiceImplementation> {
  /** A client of the service at `address`. */
  client(address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>): C;
  /** For `server.addService(service.definition(), handlers)`. */
  definition(): grpc.ServiceDefinition<H>;
}

/** A method's own serializer and deserializer in place of protobufjs's (raft.ts: the Raft stream's
 *  hand-written codec). `ownStrictDecoder` tells the strict request decoder (server/client-api/strict-decode.ts)
 *  that the deserializer already refuses what it would: it is not walked twice. */
export interface MethodCodec<Req> {
  requestSerialize(value: Req): Buffer;
  requestDeserialize(bytes: Buffer): unknown;
  /** A bidi method's answers too (Forward: the answers are encoded and decoded by hand as well). */
  responseSerialize?(value: Buffer): Buffer;
  responseDeserialize?(bytes: Buffer): unknown;
  ownStrictDecoder: true;
}

export function protoService<C extends grpc.Client, H extends grpc.UntypedServiceImplementation>(
  fullName: string,
  codecs: Readonly<Record<string, MethodCodec<never>>> = {},
): Service<C, H> {
  let made: ClientConstructor<C, H> | undefined;
  const constructor = (): ClientConstructor<C, H> => {
    if (made === undefined) {
      const def = packageDefinition()[fullName];
      if (def === undefined || 'format' in def) throw new Error(`leasehold: ${fullName} is not a service in proto/`);
      const methods: Record<string, object> = { ...(def as Record<string, object>) };
      for (const [name, codec] of Object.entries(codecs)) {
        const method = methods[name];
        if (method === undefined) throw new Error(`leasehold: ${fullName} has no method ${name}`);
        methods[name] = { ...method, ...codec };
      }
      const shortName = fullName.slice(fullName.lastIndexOf('.') + 1);
      made = grpc.makeGenericClientConstructor(methods as unknown as grpc.ServiceDefinition, shortName) as unknown as ClientConstructor<
        C,
        H
      >;
    }
    return made;
  };
  return {
    client: (address, credentials, options) => new (constructor())(address, credentials, options),
    definition: () => constructor().service,
  };
}
