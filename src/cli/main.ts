#!/usr/bin/env node
// The `leasehold` command: serve one node, run a local dev cluster, or talk to a cluster.
import { Command } from 'commander';
import { serveCommand } from './serve.js';
import { reportError } from './exit-codes.js';
import { packageVersion } from './version.js';

async function buildProgram(argv: string[]): Promise<Command> {
  const program = new Command();
  program
    .name('leasehold')
    .description('leasehold: a Raft-replicated lock service with leases, fencing tokens and controlled release')
    .version(packageVersion(), '-V, --version', 'print the leasehold version')
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ sortSubcommands: false });
  serveCommand(program);
  // A node's start (`leasehold serve ...`) parses with the serve command alone, which says and refuses what
  // it did beside the others: their modules (the client, the CLI's own parsers) were ~20 ms of CPU at every
  // node's start (issue 36).
  if (argv[2] === 'serve') return program;
  const [dev, client, watch, cluster, snapshot, run, health] = await Promise.all([
    import('./dev.js'),
    import('./client-commands.js'),
    import('./watch-command.js'),
    import('./cluster-commands.js'),
    import('./snapshot-commands.js'),
    import('./run.js'),
    import('./health.js'),
  ]);
  dev.devCommand(program);
  client.clientCommands(program);
  watch.watchCommand(program);
  watch.observeCommand(program);
  cluster.clusterCommands(program);
  snapshot.snapshotCommands(program);
  run.runCommand(program);
  run.electCommand(program);
  health.healthCommand(program);
  return program;
}

buildProgram(process.argv)
  .then((program) => program.parseAsync(process.argv))
  .catch((err: unknown) => {
    // Exit codes as SPEC says (usage 1, unreachable 2, refused 3, denied 4); see exit-codes.ts.
    process.exit(reportError(err));
  });
