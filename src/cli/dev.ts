// `leasehold dev`: a local 3-node cluster on loopback as child processes, data under ./data.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { devConfigYaml } from '../config/dev.js';

export function devCommand(program: Command): void {
  program
    .command('dev')
    .description('start a local 3-node cluster on loopback (data under ./data; Ctrl-C stops all; a restart keeps the data)')
    .option('--data <dir>', 'data directory', 'data')
    .option('--base-port <port>', 'first of three consecutive ports', '7001')
    .option(
      '--metrics-base-port <port>',
      'first of three consecutive ports for GET /metrics and the dashboard (default: --base-port + 2000; 0 = none)',
    )
    .action(async (opts: { data: string; basePort: string; metricsBasePort?: string }) => {
      const dataDir = resolve(opts.data);
      const basePort = Number(opts.basePort);
      if (!Number.isInteger(basePort) || basePort < 1 || basePort > 65533)
        throw new Error(`--base-port: expected a port number, got ${opts.basePort}`);
      const metricsBasePort = opts.metricsBasePort === undefined ? basePort + 2000 : Number(opts.metricsBasePort);
      if (!Number.isInteger(metricsBasePort) || metricsBasePort < 0 || metricsBasePort > 65533)
        throw new Error(`--metrics-base-port: expected a port number (or 0 for none), got ${opts.metricsBasePort}`);
      const metricsAddressOf = (i: number) => `127.0.0.1:${metricsBasePort + i}`;
      mkdirSync(dataDir, { recursive: true });
      const configPath = join(dataDir, 'cluster.yaml');
      if (!existsSync(configPath)) writeFileSync(configPath, devConfigYaml(basePort));
      const mainJs = join(dirname(fileURLToPath(import.meta.url)), 'main.js');
      const ids = ['n1', 'n2', 'n3'];
      const children = new Map<string, ChildProcess>();
      for (const id of ids) {
        // Each node's lines are prefixed with its id; on a terminal they are pretty-printed (and coloured).
        const tty = process.stdout.isTTY === true;
        const metricsArgs = metricsBasePort > 0 ? ['--metrics-address', metricsAddressOf(ids.indexOf(id))] : [];
        const child = spawn(process.execPath, [mainJs, 'serve', '--config', configPath, '--id', id, ...metricsArgs], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, ...(tty ? { LEASEHOLD_LOG_FORMAT: 'pretty', FORCE_COLOR: '1' } : {}) },
        });
        prefixLines(child.stdout!, process.stdout, `${id} | `);
        prefixLines(child.stderr!, process.stderr, `${id} | `);
        children.set(id, child);
        child.on('exit', (code, signal) => {
          children.delete(id);
          if (!stopping) process.stderr.write(`leasehold dev: node ${id} exited (${signal ?? code})\n`);
          if (children.size === 0) process.exit(stopping ? 0 : 1);
        });
      }
      const endpoints = ids.map((_, i) => `127.0.0.1:${basePort + i}`).join(',');
      process.stdout.write(
        `leasehold dev cluster: nodes ${ids.join(', ')} at ${endpoints}\n` +
          `config: ${configPath}\n` +
          (metricsBasePort > 0 ? `metrics: ${ids.map((_, i) => `http://${metricsAddressOf(i)}/metrics`).join('  ')}\n` : '') +
          (metricsBasePort > 0 ? `dashboard: ${ids.map((_, i) => `http://${metricsAddressOf(i)}/`).join('  ')}\n` : '') +
          `try:    npx leasehold acquire --endpoints ${endpoints} mykey --owner me --ttl 5s\n` +
          `Ctrl-C stops all nodes.\n`,
      );
      let stopping = false;
      const stopAll = () => {
        if (stopping) {
          for (const c of children.values()) c.kill('SIGKILL');
          return;
        }
        stopping = true;
        for (const c of children.values()) c.kill('SIGTERM');
        setTimeout(() => {
          for (const c of children.values()) c.kill('SIGKILL');
        }, 5000).unref();
      };
      process.on('SIGINT', stopAll);
      process.on('SIGTERM', stopAll);
    });
}

function prefixLines(from: Readable, to: Writable, prefix: string): void {
  createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`${prefix}${line}\n`));
}
