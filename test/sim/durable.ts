// One node's durable log as its disk holds it: what a crash right now would leave, decoded from the
// simulated disk's durable bytes (sim-disk.ts) with the WAL's own frame reader. The invariants read this —
// votes, terms and entries backed by the disk, a quorum's durable copies — so they judge the store that
// ships (src/raft/storage/wal-storage.ts) and not a model of it.
//
// The layout is the one wal-storage.ts documents: wal/<seq>.wal segments, the newest alone being the log
// (its first frame a base after snap/<index>.snap), each a run of CRC'd frames. The view follows the disk:
// a frame that becomes durable at the end of the newest segment is replayed onto the view; a synced
// rename, a synced file or a crash replays the newest segment again.
import { join } from 'node:path';
import { bootstrapSnapshot, emptyHardState, type Entry, type HardState, type Snapshot } from '../../src/raft/core/types.js';
import { decodeSnapshotHeader } from '../../src/raft/storage/codec.js';
import { CorruptRecordError } from '../../src/raft/storage/errors.js';
import { replaySegment, type ReplayedSegment } from '../../src/raft/storage/wal-frame.js';
import { SNAP_DIR, WAL_DIR } from '../../src/raft/storage/wal-storage.js';
import type { DurableChange, SimDisk, TornWrite } from './sim-disk.js';

/** The durable log at one moment. Entries a change did not touch are the same objects in the next image. */
export interface DurableImage {
  /** No segment on the disk: the driver finds no state (load() answers null) and bootstraps. */
  blank: boolean;
  hardState: HardState;
  snapshot: Snapshot;
  /** Entries snapshot.meta.index+1 .., contiguous. */
  entries: readonly Entry[];
  replayed: ReplayedSegment | null;
  segmentIno: number | undefined;
  snapshotIno: number | undefined;
  /** This image came from the previous one by one frame appended (entries it did not replace are shared). */
  appended: boolean;
}

/** The durable bytes break a rule of the layout: the store wrote something it cannot read back. */
export class DurableLayoutError extends Error {}

const SEGMENT_NAME = /^[0-9a-f]{16}\.wal$/;

export class DurableStore {
  image: DurableImage;
  /** Told of every change of the image (the checks in durable-checks.ts). */
  onChange: (before: DurableImage, after: DurableImage) => void = () => {};

  constructor(
    private readonly disk: SimDisk,
    private readonly dir: string,
  ) {
    this.image = blankImage();
  }

  get blank(): boolean {
    return this.image.blank;
  }

  get hardState(): HardState {
    return this.image.hardState;
  }

  get snapshot(): Snapshot {
    return this.image.snapshot;
  }

  get snapIndex(): number {
    return this.image.snapshot.meta.index;
  }

  lastIndex(): number {
    return this.image.snapshot.meta.index + this.image.entries.length;
  }

  /** Term at `index`, or undefined when compacted away or beyond the end. */
  term(index: number): number | undefined {
    return termIn(this.image, index);
  }

  entry(index: number): Entry | undefined {
    const s = this.image.snapshot.meta.index;
    if (index <= s) return undefined;
    return this.image.entries[index - s - 1];
  }

  /** The disk made something durable (sim-disk.ts onDurable); writes a crash tore are judged as lost. */
  follow(change: DurableChange): void {
    const now = this.image;
    let next: DurableImage | null;
    if (change.kind === 'write' && change.ino === now.segmentIno && now.replayed !== null && change.offset === now.replayed.validBytes) {
      next = this.appendedImage(now, now.replayed);
    } else if (change.kind === 'sync' && change.ino !== null && change.ino !== now.segmentIno && change.ino !== now.snapshotIno) {
      next = null; // a file the log does not use yet (a segment or snapshot written aside)
    } else if (change.kind === 'sync' && change.ino === null && this.sameFiles(now)) {
      next = null; // names made durable, but the log's two files are the same files
    } else {
      next = this.readImage(change.kind === 'crash' ? change.torn : []);
    }
    if (next === null) return;
    this.image = next;
    this.onChange(now, next);
  }

  /** The newest durable segment and its snapshot are still the files `image` was read from. */
  private sameFiles(image: DurableImage): boolean {
    if (image.blank) return this.newestSegment() === undefined;
    return (
      this.newestSegment() === image.segmentIno && this.disk.durableIno(this.snapshotPath(image.snapshot.meta.index)) === image.snapshotIno
    );
  }

  private newestSegment(): number | undefined {
    const walDir = join(this.dir, WAL_DIR);
    const segments = this.disk.durableNames(walDir).filter((n) => SEGMENT_NAME.test(n));
    return segments.length === 0 ? undefined : this.disk.durableIno(join(walDir, segments[segments.length - 1]!));
  }

  private snapshotPath(index: number): string {
    return join(this.dir, SNAP_DIR, index.toString(16).padStart(16, '0') + '.snap');
  }

  private appendedImage(now: DurableImage, replayed: ReplayedSegment): DurableImage {
    const after = decode(() => replaySegment(this.disk.durableBytes(now.segmentIno!), replayed));
    return { ...now, hardState: after.hardState ?? emptyHardState(), entries: after.decoded, replayed: after, appended: true };
  }

  /** The log from the newest durable segment and its snapshot, with torn writes undone. */
  private readImage(torn: readonly TornWrite[]): DurableImage {
    const segmentIno = this.newestSegment();
    if (segmentIno === undefined) return blankImage();
    const replayed = decode(() => replaySegment(undoTorn(this.disk.durableBytes(segmentIno), segmentIno, torn)));
    const snapPath = this.snapshotPath(replayed.base.index);
    const snapshotIno = this.disk.durableIno(snapPath);
    if (snapshotIno === undefined)
      throw new DurableLayoutError(
        `the newest durable segment starts after the snapshot at ${replayed.base.index}, and no durable ${snapPath} exists`,
      );
    const snapshot = readSnapshot(undoTorn(this.disk.durableBytes(snapshotIno), snapshotIno, torn), snapPath);
    if (snapshot.meta.index !== replayed.base.index || snapshot.meta.term !== replayed.base.term) {
      throw new DurableLayoutError(
        `${snapPath} holds ${snapshot.meta.index}/t${snapshot.meta.term}, the segment's base is ${replayed.base.index}/t${replayed.base.term}`,
      );
    }
    return {
      blank: false,
      hardState: replayed.hardState ?? emptyHardState(),
      snapshot,
      entries: replayed.decoded,
      replayed,
      segmentIno,
      snapshotIno,
      appended: false,
    };
  }
}

export function termIn(image: DurableImage, index: number): number | undefined {
  const s = image.snapshot.meta.index;
  if (index === s) return image.snapshot.meta.term;
  if (index < s || index > s + image.entries.length) return undefined;
  return image.entries[index - s - 1]!.term;
}

function blankImage(): DurableImage {
  return {
    blank: true,
    hardState: emptyHardState(),
    snapshot: bootstrapSnapshot([]),
    entries: [],
    replayed: null,
    segmentIno: undefined,
    snapshotIno: undefined,
    appended: false,
  };
}

function decode<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CorruptRecordError) throw new DurableLayoutError(`the durable WAL does not read back: ${err.message}`);
    throw err;
  }
}

/** The bytes as if the torn writes to this file had been lost whole: a torn frame was never written, and the
 *  store must cut it (wal-storage.ts), so the log is what was there before it. */
function undoTorn(bytes: Uint8Array, ino: number, torn: readonly TornWrite[]): Uint8Array {
  const mine = torn.filter((t) => t.ino === ino);
  if (mine.length === 0) return bytes;
  const out = bytes.slice();
  let size = out.length;
  for (const t of mine) {
    out.set(t.before, t.offset);
    if (t.sizeBefore < t.offset + t.kept) size = Math.min(size, t.sizeBefore); // it had grown the file
  }
  return out.subarray(0, size);
}

/** snap/<index>.snap: [u32 header length][header (codec.ts encodeSnapshotHeader)][data]. */
function readSnapshot(bytes: Uint8Array, path: string): Snapshot {
  const headerBytes = bytes.length >= 4 ? new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0) : -1;
  if (headerBytes < 0 || 4 + headerBytes > bytes.length) throw new DurableLayoutError(`${path} is cut short (${bytes.length} bytes)`);
  const { meta, dataBytes } = decode(() => decodeSnapshotHeader(bytes.subarray(4, 4 + headerBytes)));
  const data = bytes.slice(4 + headerBytes);
  if (data.length !== dataBytes) throw new DurableLayoutError(`${path} holds ${data.length} bytes of data, its header says ${dataBytes}`);
  return { meta, data };
}
