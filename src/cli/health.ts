// `leasehold health`: asks one node's grpc.health.v1 whether it can serve lock calls — what a container
// HEALTHCHECK or a load balancer probe runs. Exit 0 SERVING; 2 NOT_SERVING, unreachable or no answer in time.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Command } from 'commander';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { clientTlsCredentials } from '../client/tls.js';
import { checkEndpoints } from './args.js';
import { tlsFromFlags, withTlsFlags, type TlsFlags } from './client-commands.js';
import { parseDuration } from './duration.js';
import { EXIT, reportError } from './exit-codes.js';

type HealthClient = grpc.Client & {
  Check(req: { service: string }, opts: Partial<grpc.CallOptions>, cb: (e: grpc.ServiceError | null, v?: { status: string }) => void): void;
};

export function healthCommand(program: Command): void {
  withTlsFlags(program.command('health'))
    .description("ask one node's grpc.health.v1 whether it serves (exit 0 SERVING, 2 otherwise): for HEALTHCHECK and probes")
    .option(
      '--endpoint <host:port>',
      'the node to ask (env LEASEHOLD_HEALTH_ENDPOINT)',
      process.env['LEASEHOLD_HEALTH_ENDPOINT'] ?? '127.0.0.1:7001',
    )
    .option('--service <name>', "health service name ('' is the whole node)", '')
    .option('--timeout <duration>', 'how long to wait for the answer', (v) => parseDuration(v, '--timeout'), 2000)
    .action(async (o: TlsFlags & { endpoint: string; service: string; timeout: number }) => {
      let endpoint = o.endpoint;
      try {
        endpoint = checkEndpoints(o.endpoint)[0]!;
        const def = protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String, defaults: true });
        const Health = (
          grpc.loadPackageDefinition(def) as unknown as {
            grpc: { health: { v1: { Health: new (a: string, c: grpc.ChannelCredentials) => HealthClient } } };
          }
        ).grpc.health.v1.Health;
        // Under `tls` (the node serves only TLS) the probe speaks TLS too, with a client certificate where
        // clientAuth is require: Kubernetes' native grpc probe cannot, so a TLS pod probes with this command.
        const tls = tlsFromFlags(o);
        const client = new Health(endpoint, tls ? clientTlsCredentials(tls) : grpc.credentials.createInsecure());
        try {
          const status = await new Promise<string>((resolve, reject) =>
            client.Check({ service: o.service }, { deadline: new Date(Date.now() + o.timeout) }, (err, v) =>
              err ? reject(err) : resolve(v?.status ?? 'UNKNOWN'),
            ),
          );
          process.stdout.write(`${endpoint}: ${status}\n`);
          process.exitCode = status === 'SERVING' ? EXIT.OK : EXIT.UNAVAILABLE;
        } finally {
          client.close();
        }
      } catch (err) {
        const e = err as grpc.ServiceError;
        if (typeof e.code === 'number') {
          process.stderr.write(`leasehold: ${endpoint}: no health answer (${grpc.status[e.code]}: ${e.details})\n`);
          process.exitCode = EXIT.UNAVAILABLE;
        } else reportError(err, [endpoint]);
      }
    });
}
