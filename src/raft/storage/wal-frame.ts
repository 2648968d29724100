// The byte layout of a WAL segment (wal-storage.ts) and how it is read back. Pure: bytes in, records out.
//
// A segment is a run of frames, one frame per save(): [u32 payload length][u32 CRC32 of the payload][payload].
// The payload is a run of records [u8 kind][u32 length][bytes]: a base (the log restarts after a snapshot),
// entries (codec.ts encodeEntry) and a hard state (encodeHardState). A frame is the unit of atomicity: a
// crash leaves it whole or torn, and a torn frame fails its length or CRC check, so a save() is never
// half-read. Every segment's first frame carries a base, so the newest segment alone holds the whole log.
import { crc32, decodeEntry, decodeHardState, encodeEntryAt, encodedEntryLength, readU64, writeU64 } from './codec.js';
import { CorruptRecordError } from './errors.js';
import type { Entry, HardState } from '../core/types.js';

export const FRAME_HEADER_BYTES = 8;
const RECORD_HEADER_BYTES = 5;
const KIND_BASE = 1;
const KIND_ENTRY = 2;
const KIND_HARD_STATE = 3;
const BASE_BYTES = 16;
/** A frame longer than this is not a frame we wrote (a snapshot never rides in the WAL). */
const MAX_FRAME_BYTES = 1 << 30;

/** The log restarts after this snapshot: entries at or below it are gone. */
export interface WalBase {
  index: number;
  term: number;
}

/** What one frame says, already encoded (so a rotation can copy entries without re-encoding). */
export interface FrameParts {
  base: WalBase | null;
  /** Entry records back to back (encodeEntryRecords, or LiveEntries.recordsFrom), contiguous indexes. */
  records: Uint8Array;
  /** encodeHardState() bytes. */
  hardState: Uint8Array | null;
}

const NO_RECORDS = new Uint8Array(0);

/** The entry records of `entries` back to back in one buffer ([kind][u32 length][encodeEntry bytes] each):
 *  a frame's entries, and what the WAL keeps of them until its next rotation (live-entries.ts). */
export function encodeEntryRecords(entries: readonly Entry[]): Uint8Array {
  if (entries.length === 0) return NO_RECORDS;
  let bytes = 0;
  for (const e of entries) bytes += RECORD_HEADER_BYTES + encodedEntryLength(e);
  const out = new Uint8Array(bytes);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let at = 0;
  for (const e of entries) {
    const length = encodedEntryLength(e);
    out[at] = KIND_ENTRY;
    view.setUint32(at + 1, length);
    encodeEntryAt(e, out, view, at + RECORD_HEADER_BYTES);
    at += RECORD_HEADER_BYTES + length;
  }
  return out;
}

/** Entry records of entries encoded one by one (encodeEntry: a replayed segment, a migrated store). */
export function recordsOfEncoded(encoded: readonly Uint8Array[]): Uint8Array {
  let bytes = 0;
  for (const e of encoded) bytes += RECORD_HEADER_BYTES + e.length;
  const out = new Uint8Array(bytes);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let at = 0;
  for (const e of encoded) {
    out[at] = KIND_ENTRY;
    view.setUint32(at + 1, e.length);
    out.set(e, at + RECORD_HEADER_BYTES);
    at += RECORD_HEADER_BYTES + e.length;
  }
  return out;
}

export function encodeFrame(parts: FrameParts): Uint8Array {
  let payloadBytes = 0;
  if (parts.base) payloadBytes += RECORD_HEADER_BYTES + BASE_BYTES;
  payloadBytes += parts.records.length;
  if (parts.hardState) payloadBytes += RECORD_HEADER_BYTES + parts.hardState.length;
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payloadBytes);
  const view = new DataView(frame.buffer);
  let at = FRAME_HEADER_BYTES;
  const record = (kind: number, length: number): void => {
    frame[at] = kind;
    view.setUint32(at + 1, length);
    at += RECORD_HEADER_BYTES;
  };
  if (parts.base) {
    record(KIND_BASE, BASE_BYTES);
    writeU64(view, at, parts.base.index);
    writeU64(view, at + 8, parts.base.term);
    at += BASE_BYTES;
  }
  frame.set(parts.records, at);
  at += parts.records.length;
  if (parts.hardState) {
    record(KIND_HARD_STATE, parts.hardState.length);
    frame.set(parts.hardState, at);
    at += parts.hardState.length;
  }
  view.setUint32(0, payloadBytes);
  view.setUint32(4, crc32(frame, FRAME_HEADER_BYTES, frame.length));
  return frame;
}

/** The log a segment describes, replayed frame by frame. */
export interface ReplayedSegment {
  base: WalBase;
  hardState: HardState | null;
  /** Encoded entries base.index+1 .. base.index+entries.length. */
  entries: Uint8Array[];
  /** Decoded, for load(). */
  decoded: Entry[];
  /** Bytes of whole frames: where the next frame goes. */
  validBytes: number;
  /** Why the bytes after validBytes were not read (a torn last write), or null when the file ended cleanly. */
  tornTail: string | null;
}

/**
 * Replays a segment. Segments are preallocated with zeros (wal-storage.ts), so the written frames end at the
 * first all-zero header. A bad frame (short, running past the file, failing its CRC, or non-zero bytes after
 * the end) is a torn last write when no whole frame follows it anywhere — the crash came mid-save and nothing
 * after it was ever written — and is reported in tornTail. When a whole frame does follow, it is corruption
 * (CorruptRecordError): dropping the bad frame and what follows would silently forget a vote or an
 * acknowledged entry. A first frame without a base is corruption too. With `from`, the replay resumes at
 * from.validBytes of the same segment, from the state `from` holds there.
 */
export function replaySegment(bytes: Uint8Array, from: ReplayedSegment | null = null): ReplayedSegment {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Carrying on after `from` (left unchanged): the simulator's view of a segment as it grows, one frame
  // at a time (test/sim/durable.ts), instead of replaying the whole segment after every write.
  let at = from?.validBytes ?? 0;
  let out: ReplayedSegment | null = from === null ? null : { ...from, entries: from.entries.slice(), decoded: from.decoded.slice() };
  let tornTail: string | null = null;
  while (at < bytes.length) {
    if (bytes.length - at >= FRAME_HEADER_BYTES && view.getUint32(at) === 0 && view.getUint32(at + 4) === 0) {
      if (!isZero(bytes, at)) tornTail = `torn write at byte ${at}: non-zero bytes after the last frame`;
      break; // the preallocated zeros: nothing was written from here on
    }
    const problem = frameProblem(bytes, view, at);
    if (problem !== null) {
      tornTail = `torn write at byte ${at}: ${problem}`;
      break;
    }
    const length = view.getUint32(at);
    const start = at + FRAME_HEADER_BYTES;
    out = applyFrame(out, bytes, view, start, start + length, at);
    at = start + length;
  }
  if (tornTail !== null) {
    const later = wholeFrameAfter(bytes, view, at);
    if (later !== null)
      throw new CorruptRecordError(
        `WAL frame at byte ${at}: ${tornTail.replace(/^torn write at byte \d+: /, '')}, and a whole frame follows at byte ${later}`,
      );
  }
  if (out === null) throw new CorruptRecordError(`WAL segment holds no whole frame${tornTail ? ` (${tornTail})` : ''}`);
  out.validBytes = at;
  out.tornTail = tornTail;
  return out;
}

function frameProblem(bytes: Uint8Array, view: DataView, at: number): string | null {
  if (bytes.length - at < FRAME_HEADER_BYTES) return `${bytes.length - at} bytes, shorter than a frame header`;
  const length = view.getUint32(at);
  const end = at + FRAME_HEADER_BYTES + length;
  if (length === 0) return 'empty frame';
  if (length > MAX_FRAME_BYTES || end > bytes.length) return `frame of ${length} bytes runs past the end of the file`;
  if (crc32(bytes, at + FRAME_HEADER_BYTES, end) !== view.getUint32(at + 4)) return 'CRC mismatch';
  return null;
}

/** Where a whole frame starts after `from`, or null. Only run after a bad frame: a torn write leaves none. */
function wholeFrameAfter(bytes: Uint8Array, view: DataView, from: number): number | null {
  for (let at = from + 1; at + FRAME_HEADER_BYTES <= bytes.length; at++) {
    if (bytes[at] === 0 && isZeroRun(bytes, at, FRAME_HEADER_BYTES)) continue; // zeros: no frame here
    if (frameProblem(bytes, view, at) === null) return at;
  }
  return null;
}

function isZero(bytes: Uint8Array, from: number): boolean {
  return isZeroRun(bytes, from, bytes.length - from);
}

function isZeroRun(bytes: Uint8Array, from: number, count: number): boolean {
  for (let i = from; i < from + count; i++) if (bytes[i] !== 0) return false;
  return true;
}

function applyFrame(
  seg: ReplayedSegment | null,
  bytes: Uint8Array,
  view: DataView,
  start: number,
  end: number,
  frameAt: number,
): ReplayedSegment {
  let at = start;
  let out = seg;
  while (at < end) {
    if (end - at < RECORD_HEADER_BYTES) throw new CorruptRecordError(`WAL frame at byte ${frameAt}: record header cut short`);
    const kind = bytes[at]!;
    const length = view.getUint32(at + 1);
    const body = at + RECORD_HEADER_BYTES;
    if (body + length > end) throw new CorruptRecordError(`WAL frame at byte ${frameAt}: record runs past its frame`);
    const value = bytes.subarray(body, body + length);
    if (kind === KIND_BASE) {
      if (length !== BASE_BYTES) throw new CorruptRecordError(`WAL frame at byte ${frameAt}: base record of ${length} bytes`);
      const base = { index: readU64(view, body), term: readU64(view, body + 8) };
      out = { base, hardState: out?.hardState ?? null, entries: [], decoded: [], validBytes: 0, tornTail: null };
    } else if (out === null) {
      throw new CorruptRecordError('WAL segment does not start with a base record');
    } else if (kind === KIND_ENTRY) {
      const copy = value.slice(); // the file's buffer is not kept alive by an entry
      const entry = decodeEntry(copy);
      const first = out.base.index + 1;
      const last = out.base.index + out.entries.length;
      // Raft §5.3: entries from a new leader replace the stored suffix from their first index on.
      if (entry.index <= out.base.index || entry.index > last + 1) {
        throw new CorruptRecordError(`WAL entry ${entry.index} does not follow the log ${first}..${last}`);
      }
      out.entries.length = entry.index - first;
      out.decoded.length = entry.index - first;
      out.entries.push(copy);
      out.decoded.push(entry);
    } else if (kind === KIND_HARD_STATE) {
      out.hardState = decodeHardState(value);
    } else {
      throw new CorruptRecordError(`WAL frame at byte ${frameAt}: unknown record kind ${kind}`);
    }
    at = body + length;
  }
  if (out === null) throw new CorruptRecordError('WAL segment does not start with a base record');
  return out;
}
