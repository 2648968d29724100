// Which lock state machine (and lock leader) the simulation runs: the real one (src/lock), or a scratch copy
// with a planted bug (SIM_LOCK=/abs/dir, a copy of src/lock — see lock-mutants.ts). Typed structurally, so a
// scratch copy whose internals differ still plugs in as long as its public surface is the same.
import { LockMachine, decodeCommand, encodeCommand } from '../../src/lock/index.js';
import { LockLeader, type LockLeaderConfig, type LockStateView } from '../../src/lock/leader/index.js';
import type { DueLease, LockCommand, LockMachineOptions, LockResult, LockView } from '../../src/lock/index.js';
import type { LockEventSink } from '../../src/lock/events.js';
import type { SnapshotJob } from '../../src/raft/fsm.js';
import * as storeRecords from '../../src/lock/store-records.js';
import type { RecordsModule } from '../../src/state/lock-store.js';

/** The public surface of LockMachine the simulator drives. */
export interface LockMachineLike {
  readonly appliedIndex: number;
  readonly logNowMs: number;
  readonly epochTerm: number;
  readonly epochStartMs: number;
  readonly leaseCount: number;
  readonly dedupSize: number;
  /** What the leader's admission counts (src/lock/leader/types.ts LockStateView), read by the limits check. */
  readonly keyCount: number;
  readonly waiterCount: number;
  readonly sessionCount: number;
  leaseCountOf(owner: string): number;
  waiterCountOf(key: string): number;
  recordOf(key: string): { owner: string } | null | undefined;
  /** The cluster level the log reached (versions.ts). */
  readonly clusterLevel: number;
  /** Where the machine reports its changes (Watch); the simulator's LockFsm sets none. */
  eventSink: LockEventSink | null;
  /** Whether the log records member `id` as having run (absent in a scratch copy from before it). */
  hasRun?(id: string): boolean;
  hasLiveLeases(): boolean;
  apply(index: number, term: number, data: Uint8Array): LockResult;
  skip(index: number): void;
  get(key: string): LockView;
  /** Open sessions (absent in a scratch copy from before sessions). */
  sessionList?(): { id: number; owner: string; live: boolean; ttlMs: number; expiresAtMs: number; holds: number }[];
  expiredLeases(nowMs: number, limit: number): DueLease[];
  snapshot(): Uint8Array;
  beginSnapshot(sizeHint: number, sliceItems?: number): SnapshotJob;
  digest(): string;
}

/**
 * Options handed to every machine the simulator creates. `nodeClock` is NOT an option of the real machine
 * (which must never read a clock, and ignores it): it exists so a scratch copy can plant the bug "lease
 * deadline computed from the applying node's clock" — it reads the clock of the node applying the entry.
 */
export type SimLockMachineOptions = Partial<LockMachineOptions> & { nodeClock?: () => number };

export interface LockMachineClass {
  new (options?: SimLockMachineOptions): LockMachineLike;
  restore(bytes: Uint8Array, options?: SimLockMachineOptions): LockMachineLike;
}

/** The lock leader (src/lock/leader): every node's lock service runs the module's (LockServiceOptions.createLeader). */
export type LockLeaderClass = new (state: () => LockStateView, config?: Partial<LockLeaderConfig>) => LockLeader;

export interface LockModule {
  /** 'src/lock' or the scratch directory. */
  label: string;
  LockMachine: LockMachineClass;
  LockLeader: LockLeaderClass;
  encodeCommand(command: LockCommand): Uint8Array;
  decodeCommand(bytes: Uint8Array): LockCommand;
  /** The machine's records for the applied store (store-records.ts); absent in a scratch copy from before it
   *  (its nodes then keep their state in memory and the log's snapshots, as before). */
  records?: RecordsModule<LockMachineLike>;
}

export const realLockModule: LockModule = {
  label: 'src/lock',
  LockMachine: LockMachine as unknown as LockMachineClass,
  LockLeader,
  encodeCommand,
  decodeCommand,
  records: storeRecords as unknown as RecordsModule<LockMachineLike>,
};

/** The module at `dir` (a copy of src/lock: machine.ts, commands.ts and leader/index.ts), or the real one when
 *  dir is empty. The leader comes from the copy too, so a bug planted in src/lock/leader runs. */
export async function loadLockModule(dir: string | undefined): Promise<LockModule> {
  if (dir === undefined || dir === '') return realLockModule;
  const machine = (await import(`${dir}/machine.ts`)) as { LockMachine?: LockMachineClass };
  const commands = (await import(`${dir}/commands.ts`)) as Partial<Pick<LockModule, 'encodeCommand' | 'decodeCommand'>>;
  const leader = (await import(`${dir}/leader/index.ts`)) as { LockLeader?: LockLeaderClass };
  const records = (await import(`${dir}/store-records.ts`).catch(() => null)) as RecordsModule<LockMachineLike> | null;
  if (!machine.LockMachine || !commands.encodeCommand || !commands.decodeCommand || !leader.LockLeader) {
    throw new Error(
      `SIM_LOCK=${dir}: expected machine.ts (LockMachine), commands.ts (encodeCommand, decodeCommand) and leader/index.ts (LockLeader)`,
    );
  }
  return {
    label: dir,
    LockMachine: machine.LockMachine,
    LockLeader: leader.LockLeader,
    encodeCommand: commands.encodeCommand,
    decodeCommand: commands.decodeCommand,
    ...(records?.StoreRecords !== undefined ? { records } : {}),
  };
}
