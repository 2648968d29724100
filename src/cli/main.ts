#!/usr/bin/env node
// The `leasehold` command: serve one node, run a local dev cluster, or talk to a cluster.
import { Command } from 'commander';
import { serveCommand } from './serve.js';
import { devCommand } from './dev.js';
import { clientCommands } from './client-commands.js';
import { electCommand, runCommand } from './run.js';
import { clusterCommands } from './cluster-commands.js';
import { snapshotCommands } from './snapshot-commands.js';
import { healthCommand } from './health.js';
import { observeCommand, watchCommand } from './watch-command.js';
import { reportError } from './exit-codes.js';
import { packageVersion } from './version.js';

function buildProgram(): Command {
  const program = new Command();
  program
    .name('leasehold')
    .description('leasehold: a Raft-replicated lock service with leases, fencing tokens and controlled release')
    .version(packageVersion(), '-V, --version', 'print the leasehold version')
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ sortSubcommands: false });
  serveCommand(program);
  devCommand(program);
  clientCommands(program);
  watchCommand(program);
  observeCommand(program);
  clusterCommands(program);
  snapshotCommands(program);
  runCommand(program);
  electCommand(program);
  healthCommand(program);
  return program;
}

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    // Exit codes as SPEC says (usage 1, unreachable 2, refused 3, denied 4); see exit-codes.ts.
    process.exit(reportError(err));
  });
