// The shape of a test-fault file (env LEASEHOLD_TEST_FAULTS=<path>), shared by the node that reads it and
// the test harness that writes it (test/lin/node-faults.ts). Every field is optional; an absent file, or an
// absent field, means "no fault of that kind".
//
//   clock.offsetMs          the node's WALL clock minus true time. Changing it is a wall-clock jump (forward
//                           or back). The node stamps and judges leases on a monotonic clock anchored to the
//                           wall clock once, at process start (src/raft/env.ts realEnv), so a jump reaches
//                           its stamps only at its next start — exactly like an NTP step on a real host.
//   clock.driftPpm          rate error of the node's MONOTONIC clock, parts per million: +20000 runs 2 % fast.
//                           It also scales the node's timers (Raft ticks, checkpoints, housekeeping): a fast
//                           clock fires them early in true time. Applies from the moment it is read.
//   disk.fsyncDelayMs       extra latency added to every synced write (a save that syncs, compact), before it
//                           is made; a save that only moves the commit index syncs nothing and is not delayed.
//   disk.failWrites         every durable write fails without writing: the driver must stop the node (exit 70).
//   disk.crashAfterBatches  the node kills itself with SIGKILL (no cleanup, no flush of anything buffered) right
//                           after that many more durable batches land, before the driver acts on the last one.
//                           One-shot: the node records the setting it crashed on and does not re-arm it after
//                           a restart from the same file.
//   snapshot.corruptStreams the next that many snapshots this node receives from a leader have the last byte of
//                           their last chunk (a record stream's checksum) flipped before its store writes it:
//                           the store must refuse each such stream and the leader send it again. Counted afresh
//                           whenever the file changes.
export interface ClockFaults {
  offsetMs?: number;
  driftPpm?: number;
}

export interface DiskFaults {
  fsyncDelayMs?: number;
  failWrites?: boolean;
  crashAfterBatches?: number | null;
}

export interface SnapshotFaults {
  corruptStreams?: number;
}

export interface TestFaults {
  clock?: ClockFaults;
  disk?: DiskFaults;
  snapshot?: SnapshotFaults;
}

/** A fast clock beyond this is refused outright: it would make timers spin (and is no clock a host has). */
const MAX_DRIFT_PPM = 500_000;

/** Parses a fault file's text; throws with the reason on a malformed one (the caller keeps the last good one). */
export function parseTestFaults(text: string): TestFaults {
  const raw = JSON.parse(text) as unknown;
  if (!isObject(raw)) throw new Error('the fault file must hold a JSON object');
  const out: TestFaults = {};
  if (raw['clock'] !== undefined) {
    const c = raw['clock'];
    if (!isObject(c)) throw new Error('clock must be an object');
    out.clock = {};
    if (c['offsetMs'] !== undefined) out.clock.offsetMs = finite(c['offsetMs'], 'clock.offsetMs');
    if (c['driftPpm'] !== undefined) {
      const d = finite(c['driftPpm'], 'clock.driftPpm');
      if (Math.abs(d) > MAX_DRIFT_PPM) throw new Error(`clock.driftPpm ${d} is beyond ±${MAX_DRIFT_PPM}`);
      out.clock.driftPpm = d;
    }
  }
  if (raw['disk'] !== undefined) {
    const d = raw['disk'];
    if (!isObject(d)) throw new Error('disk must be an object');
    out.disk = {};
    if (d['fsyncDelayMs'] !== undefined) {
      const v = finite(d['fsyncDelayMs'], 'disk.fsyncDelayMs');
      if (v < 0) throw new Error('disk.fsyncDelayMs must be >= 0');
      out.disk.fsyncDelayMs = v;
    }
    if (d['failWrites'] !== undefined) {
      if (typeof d['failWrites'] !== 'boolean') throw new Error('disk.failWrites must be a boolean');
      out.disk.failWrites = d['failWrites'];
    }
    if (d['crashAfterBatches'] !== undefined && d['crashAfterBatches'] !== null) {
      const n = finite(d['crashAfterBatches'], 'disk.crashAfterBatches');
      if (!Number.isInteger(n) || n < 0) throw new Error('disk.crashAfterBatches must be a whole number >= 0');
      out.disk.crashAfterBatches = n;
    } else if (d['crashAfterBatches'] === null) out.disk.crashAfterBatches = null;
  }
  if (raw['snapshot'] !== undefined) {
    const sn = raw['snapshot'];
    if (!isObject(sn)) throw new Error('snapshot must be an object');
    out.snapshot = {};
    if (sn['corruptStreams'] !== undefined) {
      const n = finite(sn['corruptStreams'], 'snapshot.corruptStreams');
      if (!Number.isInteger(n) || n < 0) throw new Error('snapshot.corruptStreams must be a whole number >= 0');
      out.snapshot.corruptStreams = n;
    }
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function finite(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${what} must be a finite number`);
  return v;
}
