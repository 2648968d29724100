// The error every client call rejects with: a gRPC status code and the server's (or our) details.
import * as grpc from '@grpc/grpc-js';

export class RpcError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
  ) {
    super(`${grpc.status[code] ?? code}: ${details}`);
    this.name = 'RpcError';
  }
}
