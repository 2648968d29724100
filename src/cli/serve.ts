import { resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { startNode } from '../server/assembly/runtime.js';
import { EXIT } from './exit-codes.js';

export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run one node of the cluster described in a YAML config')
    .requiredOption('--config <file>', 'cluster config (YAML); see cluster.example.yaml')
    .requiredOption('--id <nodeId>', 'which node of the config this process is')
    .option('--join', 'first start of a node added with `leasehold members add`: never bootstrap; wait for the leader and catch up')
    .option(
      '--data-dir <dir>',
      "this node's data directory, instead of its dataDir in the config (env LEASEHOLD_DATA_DIR)",
      process.env['LEASEHOLD_DATA_DIR'],
    )
    .option(
      '--metrics-address <host:port>',
      "serve GET /metrics and the dashboard (GET /) here, instead of the config's metricsAddress (env LEASEHOLD_METRICS_ADDRESS)",
      process.env['LEASEHOLD_METRICS_ADDRESS'],
    )
    .action(async (opts: { config: string; id: string; join?: boolean; dataDir?: string; metricsAddress?: string }) => {
      const config = loadConfig(opts.config);
      if (opts.metricsAddress !== undefined && !/^[^\s:]+:\d{1,5}$/.test(opts.metricsAddress))
        throw new Error(`--metrics-address: expected host:port, got ${JSON.stringify(opts.metricsAddress)}`);
      const running = await startNode(config, opts.id, {
        join: opts.join ?? false,
        ...(opts.dataDir ? { dataDir: resolve(opts.dataDir) } : {}),
        ...(opts.metricsAddress ? { metricsAddress: opts.metricsAddress } : {}),
        onFatal: () => process.exit(EXIT.NODE_FAILED),
      });
      let signals = 0;
      const stop = (signal: string) => {
        signals++;
        if (signals > 1) process.exit(1); // a second Ctrl-C: stop now (always safe: state is on disk)
        running.logger.info({ nodeId: opts.id, signal }, 'shutting down');
        running.shutdown().then(
          () => process.exit(0),
          (err: unknown) => {
            running.logger.error({ err: String(err) }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      // SIGHUP re-reads the TLS files (certificate rotation without a restart); a bad file keeps the old ones.
      process.on('SIGHUP', () => {
        try {
          if (!running.reloadTls()) running.logger.info({ nodeId: opts.id }, 'SIGHUP: no tls configured, nothing to reload');
        } catch (err) {
          running.logger.error({ nodeId: opts.id, err: String(err) }, 'SIGHUP: TLS reload failed; keeping the old certificates');
        }
      });
    });
}
