// The slice of node:fs the WAL store (wal-storage.ts) calls, as an interface. It exists for the
// deterministic simulator (test/sim/sim-disk.ts): there the store that ships runs over an in-memory disk
// that loses unsynced writes and tears the one in flight at a crash, on virtual time. A node passes
// node:fs itself (nodeWalFs), so every call is the very call it was, with nothing wrapped around it.
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';

/** What wal-storage.ts does with a FileHandle (snapshot files, new segments, directory syncs). */
export interface WalFileHandle {
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<unknown>;
  writev(buffers: Uint8Array[], position: number): Promise<unknown>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

export interface WalFileSystem {
  // The callback API on the save path: one thread-pool hop each, no FileHandle promise around it.
  open(path: string, flags: number, callback: (err: NodeJS.ErrnoException | null, fd: number) => void): void;
  write(
    fd: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
    callback: (err: NodeJS.ErrnoException | null, written: number) => void,
  ): void;
  fsync(fd: number, callback: (err: NodeJS.ErrnoException | null) => void): void;
  closeSync(fd: number): void;
  promises: {
    open(path: string, flags: string, mode?: number): Promise<WalFileHandle>;
    readdir(path: string): Promise<string[]>;
    readFile(path: string): Promise<Uint8Array>;
    writeFile(path: string, data: Uint8Array, options: { flag: string }): Promise<void>;
    rename(oldPath: string, newPath: string): Promise<void>;
    rm(path: string, options: { force: boolean }): Promise<void>;
    unlink(path: string): Promise<void>;
    mkdir(path: string, options: { recursive: true }): Promise<unknown>;
    stat(path: string): Promise<unknown>;
  };
}

/** The real file system: node:fs's own functions. */
export const nodeWalFs: WalFileSystem = { open: fs.open, write: fs.write, fsync: fs.fsync, closeSync: fs.closeSync, promises: fsp };
