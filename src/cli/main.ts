#!/usr/bin/env node
// The `leasehold` command: serve one node, run a local dev cluster, or talk to a cluster.
import { Command } from 'commander';
import { serveCommand } from './serve.js';
import { devCommand } from './dev.js';
import { clientCommands } from './client-commands.js';
import { runCommand } from './run.js';
import { clusterCommands } from './cluster-commands.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('leasehold')
    .description('leasehold: a Raft-replicated lock service with leases, fencing tokens and controlled release')
    .showHelpAfterError()
    .configureHelp({ sortSubcommands: false });
  serveCommand(program);
  devCommand(program);
  clientCommands(program);
  clusterCommands(program);
  runCommand(program);
  return program;
}

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`leasehold: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
  });
