// The simulator's disk (sim-disk.ts) and its durable view (durable.ts), driven by hand: what survives a
// crash, and that the real WalStorage over it recovers exactly the durable log.
import { constants } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bootstrapSnapshot, type Entry } from '../../src/raft/core/types.js';
import { WalStorage } from '../../src/raft/storage/wal-storage.js';
import { recoveryMismatch } from './durable-checks.js';
import { DurableStore } from './durable.js';
import { SimRng } from './rng.js';
import { SimDisk, type CrashReport, type DiskClock } from './sim-disk.js';

/** A clock whose timers run only when the test says so; each sync takes 1 ms. */
class HandClock implements DiskClock {
  private timers: { at: number; fn: () => void }[] = [];
  now = 0;
  dead = false;
  alive = (): boolean => !this.dead;
  after = (ms: number, fn: () => void): void => void this.timers.push({ at: this.now + ms, fn });
  syncLatencyMs = (): number => 1;
  syncStarted = (): void => {};

  /** Runs every timer due within `ms`, letting the promise callbacks in between settle. */
  async advance(ms: number): Promise<void> {
    const until = this.now + ms;
    await settle();
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (next === undefined || next.at > until) break;
      this.timers.shift();
      this.now = next.at;
      if (!this.dead) next.fn();
      await settle();
    }
    this.now = until;
  }

  get pending(): number {
    return this.timers.length;
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

function write(files: ReturnType<SimDisk['open']>, fd: number, bytes: Uint8Array, at: number): Promise<void> {
  return new Promise((resolve, reject) => files.write(fd, bytes, 0, bytes.length, at, (err) => (err ? reject(err) : resolve())));
}

function openDsync(files: ReturnType<SimDisk['open']>, path: string): Promise<number> {
  return new Promise((resolve, reject) =>
    files.open(path, constants.O_WRONLY | constants.O_DSYNC, (err, fd) => (err ? reject(err) : resolve(fd))),
  );
}

describe('the simulated disk', () => {
  it('an O_DSYNC write in flight at a crash is lost, torn (a strict prefix survives) or kept whole — each on some seed, the same on a replayed seed', async () => {
    const seen = { lost: 0, torn: 0, whole: 0 };
    const outcome = async (seed: number): Promise<{ bytes: number[]; report: CrashReport }> => {
      const disk = new SimDisk(new SimRng(seed), '/d');
      const clock = new HandClock();
      const files = disk.open(clock);
      await files.promises.writeFile('/d/f', new Uint8Array(0), { flag: 'w' });
      const dir = await files.promises.open('/d', 'r');
      const synced = dir.sync();
      await clock.advance(1);
      await synced;
      const fd = await openDsync(files, '/d/f');
      const first = write(files, fd, enc('durable;'), 0);
      await clock.advance(1);
      await first;
      void write(files, fd, enc('in flight'), 8); // never answered: the crash comes first
      await clock.advance(0.5);
      const report = disk.crash();
      clock.dead = true;
      return { bytes: [...disk.durableBytes(disk.durableIno('/d/f')!)], report };
    };
    for (let seed = 1; seed <= 40; seed++) {
      const { bytes, report } = await outcome(seed);
      const text = new TextDecoder().decode(Uint8Array.from(bytes));
      expect(text.startsWith('durable;')).toBe(true); // a completed O_DSYNC write is durable
      const tail = text.slice(8);
      expect('in flight'.startsWith(tail)).toBe(true);
      if (tail === '') seen.lost++;
      else if (tail === 'in flight') seen.whole++;
      else {
        seen.torn++;
        expect(report.torn).toHaveLength(1);
        expect(report.torn[0]!.kept).toBe(tail.length);
      }
      expect((await outcome(seed)).bytes).toEqual(bytes); // the seed decides, nothing else
    }
    expect(seen.lost).toBeGreaterThan(0);
    expect(seen.torn).toBeGreaterThan(0);
    expect(seen.whole).toBeGreaterThan(0);
  });

  it('a rename is durable once its directory is synced; before that a crash keeps the old name or the new one, never both or neither', async () => {
    const kept = new Set<string>();
    for (let seed = 1; seed <= 30; seed++) {
      const disk = new SimDisk(new SimRng(seed), '/d');
      const clock = new HandClock();
      const files = disk.open(clock);
      const file = await files.promises.open('/d/a.tmp', 'w');
      await file.write(enc('x'), 0, 1, 0);
      const dataSynced = file.sync();
      await clock.advance(1);
      await dataSynced;
      const dir = await files.promises.open('/d', 'r');
      const created = dir.sync();
      await clock.advance(1);
      await created;
      await files.promises.rename('/d/a.tmp', '/d/a');
      disk.crash();
      const names = disk.durableNames('/d');
      expect(names.length).toBe(1);
      kept.add(names[0]!);
      expect([...disk.durableBytes(disk.durableIno(`/d/${names[0]!}`)!)]).toEqual([...enc('x')]);
    }
    expect([...kept].sort()).toEqual(['a', 'a.tmp']);
    const disk = new SimDisk(new SimRng(1), '/d');
    const clock = new HandClock();
    const files = disk.open(clock);
    await files.promises.writeFile('/d/b.tmp', enc('y'), { flag: 'w' });
    await files.promises.rename('/d/b.tmp', '/d/b');
    const synced = (await files.promises.open('/d', 'r')).sync();
    await clock.advance(1);
    await synced;
    disk.crash();
    expect(disk.durableNames('/d')).toEqual(['b']);
  });

  it("a dead incarnation's calls do nothing and are never answered", async () => {
    const disk = new SimDisk(new SimRng(3), '/d');
    const clock = new HandClock();
    const files = disk.open(clock);
    disk.crash();
    let answered = false;
    void files.promises.writeFile('/d/late', enc('z'), { flag: 'w' }).then(() => (answered = true));
    await clock.advance(5);
    expect(answered).toBe(false);
    expect(disk.durableNames('/d')).toEqual([]);
  });
});

describe('the real WalStorage on the simulated disk', () => {
  const entry = (index: number, term: number): Entry => ({ index, term, kind: 'normal', data: enc(`e${index}t${term}`) });

  it('recovers exactly the durable log after crashes that tear its writes, as the durable view reads it', async () => {
    let tornSeen = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const disk = new SimDisk(new SimRng(seed), '/n');
      const view = new DurableStore(disk, '/n');
      disk.onDurable = (change) => view.follow(change);
      const segmentBytes = seed % 2 === 0 ? 0 : 512;
      let clock = new HandClock();
      const store = await openStore(disk, clock, segmentBytes);
      expect(await store.load()).toBeNull();
      const boot = store.save({ hardState: { term: 1, votedFor: 'n', commitIndex: 0 }, snapshot: bootstrapSnapshot(['n']), entries: [] });
      await clock.advance(10);
      await boot;
      for (let i = 1; i <= 3; i++) {
        const saved = store.save({ hardState: { term: 1, votedFor: 'n', commitIndex: i - 1 }, snapshot: null, entries: [entry(i, 1)] });
        await clock.advance(1);
        await saved;
      }
      void store.save({ hardState: { term: 2, votedFor: 'n', commitIndex: 3 }, snapshot: null, entries: [entry(4, 2), entry(5, 2)] });
      await clock.advance(0.5); // the crash comes while this frame is on its way
      const report = disk.crash();
      clock.dead = true;
      tornSeen += report.torn.length;
      expect(view.lastIndex()).toBeGreaterThanOrEqual(3);
      clock = new HandClock();
      const reopened = openStore(disk, clock, segmentBytes);
      await clock.advance(10);
      const loaded = await (await reopened).load();
      expect(recoveryMismatch(view.image, loaded)).toBeNull();
      expect(loaded!.entries.map((e) => e.index)).toEqual(view.lastIndex() === 5 ? [1, 2, 3, 4, 5] : [1, 2, 3]);
    }
    expect(tornSeen).toBeGreaterThan(0);
  });

  it('storage-recovery reports a loaded log that is not the durable one (a torn frame kept, an entry lost)', () => {
    const image = {
      blank: false,
      hardState: { term: 1, votedFor: 'n', commitIndex: 1 },
      snapshot: bootstrapSnapshot(['n']),
      entries: [entry(1, 1)],
      replayed: null,
      segmentIno: 1,
      snapshotIno: 2,
      appended: false,
    };
    const same = { hardState: { ...image.hardState }, snapshot: image.snapshot, entries: [entry(1, 1)] };
    expect(recoveryMismatch(image, same)).toBeNull();
    expect(recoveryMismatch(image, { ...same, entries: [entry(1, 1), entry(2, 1)] })).toMatch(
      /loaded 2 entries after the snapshot, the durable log holds 1; they differ at index 2/,
    );
    expect(recoveryMismatch(image, { ...same, entries: [] })).toMatch(/differ at index 1/);
    expect(recoveryMismatch(image, { ...same, hardState: { term: 1, votedFor: 'n', commitIndex: 0 } })).toMatch(
      /loaded hard state t1 v=n c0, the durable one is t1 v=n c1/,
    );
    expect(recoveryMismatch(image, null)).toMatch(/loaded nothing/);
  });
});

async function openStore(disk: SimDisk, clock: HandClock, segmentBytes: number): Promise<WalStorage> {
  const opening = WalStorage.open('/n', { files: disk.open(clock), levelDb: false, segmentBytes });
  await clock.advance(10);
  return opening;
}
