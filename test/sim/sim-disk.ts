// One simulated server's disk, in memory, with a crash model: what the WAL store that ships
// (src/raft/storage/wal-storage.ts) runs on in the simulator, through its file-system seam (wal-fs.ts).
//
// A file (an inode) has the bytes a read sees and the bytes that are durable; every write goes to the first
// at once and waits, in order, as an unsynced write until an fsync of the file — or, on a descriptor opened
// O_DSYNC, until that write itself completes (a disk latency later). Names are a second layer: creating,
// renaming, removing a file or making a directory is an unsynced metadata operation until a directory is
// synced, which (like a journaling file system's commit) makes every metadata operation before it durable.
//
// A crash keeps, for every file, a seeded prefix of its unsynced writes and may tear the next one (a prefix
// of its bytes survives: the O_DSYNC write in flight, or a write never synced); it keeps a seeded prefix of
// the unsynced metadata operations (renames are atomic: one whole operation). Everything else is lost.
// Nothing here reads a wall clock, touches a real file or calls Math.random: the simulation's scheduler
// completes every operation that takes time (the seeded disk latency), and its rngs make every choice.
import { constants } from 'node:fs';
import { dirname, basename } from 'node:path';
import type { WalFileHandle, WalFileSystem } from '../../src/raft/storage/wal-fs.js';
import type { SimRng } from './rng.js';

/** Bytes that grow as they are written past their end. */
class Bytes {
  buf: Uint8Array;
  size: number;

  constructor(from?: Bytes) {
    this.buf = from ? from.buf.slice(0, Math.max(from.size, 16)) : new Uint8Array(16);
    this.size = from ? from.size : 0;
  }

  write(offset: number, data: Uint8Array): void {
    const end = offset + data.length;
    if (end > this.buf.length) {
      const grown = new Uint8Array(Math.max(end, this.buf.length * 2));
      grown.set(this.buf.subarray(0, this.size));
      this.buf = grown;
    }
    if (offset > this.size) this.buf.fill(0, this.size, offset); // a hole reads as zeros
    this.buf.set(data, offset);
    this.size = Math.max(this.size, end);
  }

  truncate(size: number): void {
    if (size < this.size) this.buf.fill(0, size, this.size);
    else this.write(size, new Uint8Array(0));
    this.size = size;
  }

  view(): Uint8Array {
    return this.buf.subarray(0, this.size);
  }
}

type DataOp = { kind: 'write'; offset: number; bytes: Uint8Array } | { kind: 'truncate'; size: number };

interface Inode {
  readonly ino: number;
  /** What a read sees. */
  current: Bytes;
  /** What survives a crash. */
  durable: Bytes;
  /** Writes since the last sync, oldest first (an O_DSYNC write is here while it is in flight). */
  unsynced: DataOp[];
}

type MetaOp =
  | { kind: 'link'; dir: string; name: string; ino: number }
  | { kind: 'unlink'; dir: string; name: string }
  | { kind: 'rename'; fromDir: string; from: string; toDir: string; to: string }
  | { kind: 'mkdir'; dir: string };

/** Directories and the names in them. */
class Namespace {
  readonly dirs = new Map<string, Map<string, number>>();

  copy(): Namespace {
    const out = new Namespace();
    for (const [d, names] of this.dirs) out.dirs.set(d, new Map(names));
    return out;
  }

  lookup(path: string): number | undefined {
    return this.dirs.get(dirname(path))?.get(basename(path));
  }

  apply(op: MetaOp): void {
    switch (op.kind) {
      case 'mkdir':
        if (!this.dirs.has(op.dir)) this.dirs.set(op.dir, new Map());
        return;
      case 'link':
        this.dirs.get(op.dir)?.set(op.name, op.ino);
        return;
      case 'unlink':
        this.dirs.get(op.dir)?.delete(op.name);
        return;
      case 'rename': {
        const from = this.dirs.get(op.fromDir);
        const ino = from?.get(op.from);
        if (from === undefined || ino === undefined) return;
        from.delete(op.from);
        this.dirs.get(op.toDir)?.set(op.to, ino);
        return;
      }
    }
  }
}

/** A durable change, for the log's view of the disk (durable.ts): an O_DSYNC write completed on `ino`
 *  at `offset`, or anything else (an fsync, a directory sync, a crash). */
export type DurableChange =
  | { kind: 'write'; ino: number; offset: number; length: number }
  | { kind: 'sync'; ino: number | null }
  | { kind: 'crash'; torn: readonly TornWrite[] };

/** A write a crash tore: the view of the log judges the disk as if it had been lost (see durable.ts). */
export interface TornWrite {
  ino: number;
  offset: number;
  /** How many of its bytes survived, and of how many. */
  kept: number;
  of: number;
  /** The durable bytes it overwrote, and the file's durable size before it. */
  before: Uint8Array;
  sizeBefore: number;
}

/** What a crash did, for the trace and the view. */
export interface CrashReport {
  writesKept: number;
  writesLost: number;
  torn: TornWrite[];
  metaKept: number;
  metaLost: number;
}

/** What a disk session needs from the simulation: time and liveness of the incarnation using it. */
export interface DiskClock {
  /** The incarnation that opened the session still runs. */
  alive(): boolean;
  /** Run `fn` after `ms` of virtual time, only if the incarnation still runs then. */
  after(ms: number, fn: () => void): void;
  /** The latency of one synced write (seeded). */
  syncLatencyMs(): number;
  /** Called as a synced write or sync starts, with its latency (crash arms aim inside it). */
  syncStarted(latencyMs: number): void;
}

export class SimDisk {
  private readonly inodes = new Map<number, Inode>();
  private nextIno = 1;
  private current = new Namespace();
  private durable = new Namespace();
  private unsyncedMeta: MetaOp[] = [];
  /** The session of the running incarnation; a crash ends it. */
  private session: DiskSession | null = null;
  /** Told of every durable change, after it happened. */
  onDurable: (change: DurableChange) => void = () => {};

  constructor(
    private readonly crashRng: SimRng,
    readonly root: string,
  ) {
    this.current.dirs.set(root, new Map());
    this.durable.dirs.set(root, new Map());
  }

  /** The file system one incarnation of the node sees. */
  open(clock: DiskClock): WalFileSystem {
    this.session = new DiskSession(this, clock);
    return this.session;
  }

  /** The power goes: keep a seeded prefix of every file's unsynced writes (tearing the next one, maybe) and
   *  of the unsynced metadata operations; forget everything else. */
  crash(): CrashReport {
    this.session?.end();
    this.session = null;
    const r = this.crashRng;
    const report: CrashReport = { writesKept: 0, writesLost: 0, torn: [], metaKept: 0, metaLost: 0 };
    for (const inode of this.inodes.values()) {
      const ops = inode.unsynced;
      if (ops.length === 0) continue;
      const kept = r.int(ops.length + 1);
      for (let k = 0; k < kept; k++) applyData(inode.durable, ops[k]!);
      report.writesKept += kept;
      report.writesLost += ops.length - kept;
      const next = ops[kept];
      if (next !== undefined && next.kind === 'write' && next.bytes.length > 1 && r.chance(0.5)) {
        const keep = 1 + r.int(next.bytes.length - 1);
        const d = inode.durable;
        const before = d.view().slice(next.offset, next.offset + keep);
        report.torn.push({ ino: inode.ino, offset: next.offset, kept: keep, of: next.bytes.length, before, sizeBefore: d.size });
        d.write(next.offset, next.bytes.subarray(0, keep));
        report.writesLost--;
      }
      inode.unsynced = [];
    }
    const metaKept = r.int(this.unsyncedMeta.length + 1);
    for (let k = 0; k < metaKept; k++) this.durable.apply(this.unsyncedMeta[k]!);
    report.metaKept = metaKept;
    report.metaLost = this.unsyncedMeta.length - metaKept;
    this.unsyncedMeta = [];
    this.current = this.durable.copy();
    const named = new Set<number>();
    for (const names of this.durable.dirs.values()) for (const ino of names.values()) named.add(ino);
    for (const [ino, inode] of this.inodes) {
      if (!named.has(ino))
        this.inodes.delete(ino); // a file no durable name reaches is gone
      else inode.current = new Bytes(inode.durable);
    }
    this.onDurable({ kind: 'crash', torn: report.torn });
    return report;
  }

  // ---- what survives, for the log's view (durable.ts): never what a read of the running node sees

  /** Names in `dir` that a crash now would keep, sorted. */
  durableNames(dir: string): string[] {
    return [...(this.durable.dirs.get(dir)?.keys() ?? [])].sort();
  }

  durableIno(path: string): number | undefined {
    return this.durable.lookup(path);
  }

  /** The durable bytes of file `ino` (a view: copy what you keep). */
  durableBytes(ino: number): Uint8Array {
    return this.inodes.get(ino)!.durable.view();
  }

  // ---- the operations, for DiskSession

  /** @internal */ exists(path: string): boolean {
    return this.current.dirs.has(path) || this.current.lookup(path) !== undefined;
  }

  /** @internal */ lookup(path: string): Inode | undefined {
    const ino = this.current.lookup(path);
    return ino === undefined ? undefined : this.inodes.get(ino);
  }

  /** @internal */ isDir(path: string): boolean {
    return this.current.dirs.has(path);
  }

  /** @internal */ names(dir: string): string[] | undefined {
    const names = this.current.dirs.get(dir);
    return names === undefined ? undefined : [...names.keys()].sort();
  }

  /** @internal */ meta(op: MetaOp): void {
    this.current.apply(op);
    this.unsyncedMeta.push(op);
  }

  /** @internal */ create(path: string): Inode {
    const inode: Inode = { ino: this.nextIno++, current: new Bytes(), durable: new Bytes(), unsynced: [] };
    this.inodes.set(inode.ino, inode);
    this.meta({ kind: 'link', dir: dirname(path), name: basename(path), ino: inode.ino });
    return inode;
  }

  /** @internal */ data(inode: Inode, op: DataOp): DataOp {
    applyData(inode.current, op);
    inode.unsynced.push(op);
    return op;
  }

  /** @internal An O_DSYNC write completed: it alone is durable now. */
  writeDone(inode: Inode, op: DataOp): void {
    const at = inode.unsynced.indexOf(op);
    if (at < 0) return;
    inode.unsynced.splice(at, 1);
    applyData(inode.durable, op);
    if (op.kind === 'write') this.onDurable({ kind: 'write', ino: inode.ino, offset: op.offset, length: op.bytes.length });
  }

  /** @internal An fsync of `inode` completed: the writes issued before it are durable. */
  syncDone(inode: Inode, ops: readonly DataOp[]): void {
    for (const op of ops) {
      const at = inode.unsynced.indexOf(op);
      if (at < 0) continue;
      inode.unsynced.splice(at, 1);
      applyData(inode.durable, op);
    }
    this.onDurable({ kind: 'sync', ino: inode.ino });
  }

  /** @internal A directory sync completed: the metadata operations issued before it are durable. */
  metaSyncDone(ops: readonly MetaOp[]): void {
    for (const op of ops) {
      const at = this.unsyncedMeta.indexOf(op);
      if (at < 0) continue;
      this.unsyncedMeta.splice(at, 1);
      this.durable.apply(op);
    }
    this.forgetUnreachable();
    this.onDurable({ kind: 'sync', ino: null });
  }

  /** Drops files no name reaches, now or after a crash, and no descriptor holds (removed segments and
   *  snapshots): a long run without crashes would keep every one of them. */
  private forgetUnreachable(): void {
    const keep = new Set<number>(this.session?.openInodes() ?? []);
    for (const ns of [this.current, this.durable]) for (const names of ns.dirs.values()) for (const ino of names.values()) keep.add(ino);
    for (const op of this.unsyncedMeta) if (op.kind === 'link') keep.add(op.ino);
    for (const ino of this.inodes.keys()) if (!keep.has(ino)) this.inodes.delete(ino);
  }

  /** @internal */ pendingMeta(): readonly MetaOp[] {
    return this.unsyncedMeta.slice();
  }
}

function applyData(bytes: Bytes, op: DataOp): void {
  if (op.kind === 'write') bytes.write(op.offset, op.bytes);
  else bytes.truncate(op.size);
}

function noEntry(syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: no such file or directory, ${syscall} '${path}'`), { code: 'ENOENT', errno: -2, syscall, path });
}

interface OpenFile {
  path: string;
  inode: Inode | null;
  /** O_DSYNC: each write is durable when it completes. */
  dsync: boolean;
}

/** The file system of one incarnation of the node. Once the incarnation dies (a crash) nothing it asks
 *  for happens and nothing it waits for ever completes. */
class DiskSession implements WalFileSystem {
  private ended = false;
  private readonly fds = new Map<number, OpenFile>();
  private nextFd = 3;
  readonly promises: WalFileSystem['promises'];

  constructor(
    private readonly disk: SimDisk,
    private readonly clock: DiskClock,
  ) {
    this.promises = {
      open: (path, flags) => this.task(() => this.handle(path, flags)),
      readdir: (path) =>
        this.task(() => {
          const names = this.disk.names(path);
          if (names === undefined) throw noEntry('scandir', path);
          return names;
        }),
      readFile: (path) =>
        this.task(() => {
          const inode = this.disk.lookup(path);
          if (inode === undefined) throw noEntry('open', path);
          return inode.current.view().slice();
        }),
      writeFile: (path, data, options) =>
        this.task(() => {
          let inode = this.disk.lookup(path);
          if (inode === undefined) {
            if (options.flag === 'r+') throw noEntry('open', path);
            inode = this.disk.create(path);
          } else if (options.flag !== 'r+') this.disk.data(inode, { kind: 'truncate', size: 0 });
          this.disk.data(inode, { kind: 'write', offset: 0, bytes: data.slice() });
        }),
      rename: (from, to) =>
        this.task(() => {
          if (this.disk.lookup(from) === undefined) throw noEntry('rename', from);
          this.disk.meta({ kind: 'rename', fromDir: dirname(from), from: basename(from), toDir: dirname(to), to: basename(to) });
        }),
      rm: (path, options) =>
        this.task(() => {
          if (this.disk.lookup(path) === undefined) {
            if (options.force) return;
            throw noEntry('rm', path);
          }
          this.disk.meta({ kind: 'unlink', dir: dirname(path), name: basename(path) });
        }),
      unlink: (path) =>
        this.task(() => {
          if (this.disk.lookup(path) === undefined) throw noEntry('unlink', path);
          this.disk.meta({ kind: 'unlink', dir: dirname(path), name: basename(path) });
        }),
      mkdir: (path) =>
        this.task(() => {
          const missing: string[] = [];
          for (let d = path; !this.disk.isDir(d); d = dirname(d)) missing.unshift(d);
          for (const d of missing) this.disk.meta({ kind: 'mkdir', dir: d });
          return undefined;
        }),
      stat: (path) =>
        this.task(() => {
          if (!this.disk.exists(path)) throw noEntry('stat', path);
          return {};
        }),
    };
  }

  end(): void {
    this.ended = true;
  }

  openInodes(): number[] {
    const out: number[] = [];
    for (const f of this.fds.values()) if (f.inode !== null) out.push(f.inode.ino);
    return out;
  }

  private get live(): boolean {
    return !this.ended && this.clock.alive();
  }

  /** A metadata or page-cache operation: done at once, answered after the current turn (never inside the
   *  call, as with node:fs). A dead incarnation's call does nothing and is never answered. */
  private task<T>(fn: () => T): Promise<T> {
    if (!this.live) return new Promise<T>(() => {});
    return new Promise<T>((resolve, reject) => {
      let out: T;
      try {
        out = fn();
      } catch (err) {
        queueMicrotask(() => this.live && reject(err));
        return;
      }
      queueMicrotask(() => this.live && resolve(out));
    });
  }

  /** Something that takes the disk's time (a synced write, an fsync): `done` runs when it completes. */
  private synced(done: () => void, answer: () => void): void {
    const ms = this.clock.syncLatencyMs();
    this.clock.syncStarted(ms);
    this.clock.after(ms, () => {
      if (!this.live) return;
      done();
      answer();
    });
  }

  // ---- the callback API (the save path)

  open(path: string, flags: number, callback: (err: NodeJS.ErrnoException | null, fd: number) => void): void {
    this.task(() => {
      const inode = this.disk.lookup(path);
      if (inode === undefined) throw noEntry('open', path);
      const fd = this.nextFd++;
      this.fds.set(fd, { path, inode, dsync: (flags & constants.O_DSYNC) !== 0 });
      return fd;
    }).then(
      (fd) => callback(null, fd),
      (err: NodeJS.ErrnoException) => callback(err, -1),
    );
  }

  write(
    fd: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
    callback: (err: NodeJS.ErrnoException | null, written: number) => void,
  ): void {
    if (!this.live) return;
    const file = this.fds.get(fd);
    if (file === undefined || file.inode === null) {
      queueMicrotask(() => this.live && callback(Object.assign(new Error('EBADF: bad file descriptor, write'), { code: 'EBADF' }), 0));
      return;
    }
    const inode = file.inode;
    const op = this.disk.data(inode, { kind: 'write', offset: position, bytes: buffer.slice(offset, offset + length) });
    if (!file.dsync) {
      queueMicrotask(() => this.live && callback(null, length));
      return;
    }
    this.synced(
      () => this.disk.writeDone(inode, op),
      () => callback(null, length),
    );
  }

  fsync(fd: number, callback: (err: NodeJS.ErrnoException | null) => void): void {
    if (!this.live) return;
    const file = this.fds.get(fd);
    if (file === undefined) {
      queueMicrotask(() => this.live && callback(Object.assign(new Error('EBADF: bad file descriptor, fsync'), { code: 'EBADF' })));
      return;
    }
    this.syncFile(file, () => callback(null));
  }

  closeSync(fd: number): void {
    this.fds.delete(fd);
  }

  private syncFile(file: OpenFile, answer: () => void): void {
    if (file.inode === null) {
      const ops = this.disk.pendingMeta(); // a directory: its sync commits the metadata issued before it
      this.synced(() => this.disk.metaSyncDone(ops), answer);
      return;
    }
    const inode = file.inode;
    const ops = inode.unsynced.slice();
    this.synced(() => this.disk.syncDone(inode, ops), answer);
  }

  /** promises.open: 'w' creates or truncates a file, 'r' opens a directory (to sync it). */
  private handle(path: string, flags: string): WalFileHandle {
    let file: OpenFile;
    if (flags === 'r' && this.disk.isDir(path)) {
      file = { path, inode: null, dsync: false };
    } else if (flags === 'w') {
      const found = this.disk.lookup(path);
      const inode = found ?? this.disk.create(path);
      if (found !== undefined) this.disk.data(inode, { kind: 'truncate', size: 0 });
      file = { path, inode, dsync: false };
    } else {
      const inode = this.disk.lookup(path);
      if (inode === undefined) throw noEntry('open', path);
      file = { path, inode, dsync: false };
    }
    const fd = this.nextFd++;
    this.fds.set(fd, file);
    const writeAt = (bytes: Uint8Array, position: number): Promise<unknown> =>
      this.task(() => {
        if (file.inode === null) throw Object.assign(new Error('EISDIR: illegal operation on a directory, write'), { code: 'EISDIR' });
        this.disk.data(file.inode, { kind: 'write', offset: position, bytes });
        return { bytesWritten: bytes.length };
      });
    return {
      write: (buffer, offset, length, position) => writeAt(buffer.slice(offset, offset + length), position),
      writev: (buffers, position) => {
        const total = buffers.reduce((n, b) => n + b.length, 0);
        const joined = new Uint8Array(total);
        let at = 0;
        for (const b of buffers) {
          joined.set(b, at);
          at += b.length;
        }
        return writeAt(joined, position);
      },
      sync: () => {
        if (!this.live) return new Promise<void>(() => {});
        return new Promise<void>((resolve) => this.syncFile(file, resolve));
      },
      close: () => this.task(() => void this.fds.delete(fd)),
    };
  }
}
