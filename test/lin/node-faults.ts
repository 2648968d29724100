// The harness's side of the node test faults: a NodeFaultControl writes one node's fault file, which that
// node (started with env LEASEHOLD_TEST_FAULTS=<file>) polls every ~20 ms. The file's fields, and what they
// model and do not, are documented in src/test-faults/spec.ts and clock.ts; in short:
//
//   clock.offsetMs   wall clock minus true time; a change is a wall jump. The node stamps leases on a
//                    monotonic clock anchored once at start (like realEnv), so a jump reaches its stamps only
//                    at its next restart — which LEASES.md allows (offsets between nodes are arbitrary).
//   clock.driftPpm   rate error of the node's monotonic clock (and its timers). Within the model up to the
//                    client's margin (leaseSafetyFraction 2 % = +20 000 ppm); a leader running faster than
//                    that is OUTSIDE the model: the checker's lease-cut-short rule is expected to catch it.
//   disk.fsyncDelayMs / failWrites / crashAfterBatches   see spec.ts (failWrites: the node exits 70;
//                    crashAfterBatches: SIGKILL self after N more durable batches, one-shot).
//   snapshot.corruptStreams   the next N snapshots the node receives reach its store with their checksum
//                    flipped: each must be refused (the node keeps running) and sent again.
//
// Outside the model altogether (not offered): a monotonic clock that steps, torn or lying writes (LevelDB's
// WAL makes a batch all-or-nothing; a disk that acknowledges an fsync it did not do breaks every Raft).
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crashMarkerOf, stateFileOf, type TestFaultState } from '../../src/test-faults/switch.js';
import type { ClockFaults, DiskFaults, SnapshotFaults, TestFaults } from '../../src/test-faults/spec.js';

export type { ClockFaults, DiskFaults, SnapshotFaults, TestFaults, TestFaultState };

/** The fault file of a node whose data (or node) directory is `dir`: next to it, not inside LevelDB's dir. */
export function faultFileFor(dataDirOrNodeDir: string): string {
  return `${dataDirOrNodeDir.replace(/\/+$/, '')}.faults.json`;
}

/** True time as the nodes' fault clocks measure it (performance.timeOrigin + now of any process). */
export const trueNowMs = (): number => performance.timeOrigin + performance.now();

export class NodeFaultControl {
  private faults: TestFaults = {};

  constructor(readonly filePath: string) {}

  setClock(c: ClockFaults): void {
    this.faults = { ...this.faults, clock: { ...c } };
    this.write();
  }

  setDisk(d: DiskFaults): void {
    this.faults = { ...this.faults, disk: { ...d } };
    this.write();
  }

  /** Snapshot chunks corrupted on their way into the node's store (spec.ts snapshot.corruptStreams). */
  setSnapshot(s: SnapshotFaults): void {
    this.faults = { ...this.faults, snapshot: { ...s } };
    this.write();
  }

  /** No faults from now on (the clock anchor a restart took from an offset stays until the next restart). */
  clear(): void {
    this.faults = {};
    this.write();
  }

  get current(): TestFaults {
    return structuredClone(this.faults);
  }

  /** What the node last reported (null before it first did). */
  state(): TestFaultState | null {
    try {
      return JSON.parse(readFileSync(stateFileOf(this.filePath), 'utf8')) as TestFaultState;
    } catch {
      return null;
    }
  }

  /** Forget a recorded crash, so the same crashAfterBatches setting arms again on the next start. */
  forgetCrash(): void {
    rmSync(crashMarkerOf(this.filePath), { force: true });
  }

  /** tmp + rename: the node never reads a half-written file. */
  private write(): void {
    const tmp = `${this.filePath}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.faults));
    renameSync(tmp, this.filePath);
  }
}

/** A node's fault file inside a cluster directory (the harness's layout: <dir>/<id> is the node's dataDir). */
export const clusterFaultFile = (clusterDir: string, id: string): string => faultFileFor(join(clusterDir, id));
