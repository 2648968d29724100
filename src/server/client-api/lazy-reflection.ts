// Server reflection (what grpcurl uses) registered at a node's start but built on its first call (issue 36).
// @grpc/reflection's ReflectionService indexes the whole package when it is constructed, and does it twice
// (its v1 and v1alpha halves each decode every file descriptor, once per type of the package): 75–115 ms of
// a node's CPU from spawn to SERVING, measured, for a service only an operator's tool asks. The service
// definitions come from a ReflectionService over no package (its own reflection.proto, nothing indexed);
// their handlers build the real one on the first stream and hand every stream to its handler, so what a
// client sees is what the eager service answered.
import type * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';

type Handler = (call: grpc.ServerDuplexStream<unknown, unknown>) => void;

/** The services a ReflectionService would add to a server, and its handlers by method path. */
function servicesOf(reflection: ReflectionService): { definitions: grpc.ServiceDefinition[]; handlers: Map<string, Handler> } {
  const definitions: grpc.ServiceDefinition[] = [];
  const handlers = new Map<string, Handler>();
  const capture = {
    addService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void {
      definitions.push(definition);
      for (const [name, method] of Object.entries(definition)) {
        const handler = implementation[name] ?? implementation[(method as { originalName?: string }).originalName ?? ''];
        if (handler !== undefined) handlers.set(method.path, handler as Handler);
      }
    },
  };
  reflection.addToServer(capture as unknown as grpc.Server);
  return { definitions, handlers };
}

/** Adds server reflection over the package `pkg()` returns (called on the first reflection call). */
export function addLazyReflection(server: grpc.Server, pkg: () => PackageDefinition, options: { services: string[] }): void {
  let built: Map<string, Handler> | null = null;
  const handlerFor = (path: string): Handler => {
    built ??= servicesOf(new ReflectionService(pkg(), options)).handlers;
    const handler = built.get(path);
    if (handler === undefined) throw new Error(`server reflection: no handler for ${path}`);
    return handler;
  };
  for (const definition of servicesOf(new ReflectionService({}, options)).definitions) {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [name, method] of Object.entries(definition)) {
      implementation[name] = ((call: grpc.ServerDuplexStream<unknown, unknown>) => handlerFor(method.path)(call)) as Handler;
    }
    server.addService(definition, implementation);
  }
}
