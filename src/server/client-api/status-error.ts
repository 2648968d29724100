// A gRPC error status with details, as every service handler here answers one.
import * as grpc from '@grpc/grpc-js';

export function statusError(code: grpc.status, details: string): grpc.ServiceError {
  const e = new Error(details) as grpc.ServiceError;
  e.code = code;
  e.details = details;
  e.metadata = new grpc.Metadata();
  return e;
}
