// The quorum arithmetic alone (src/raft/core/quorum.ts), table by table in the manner of etcd-io/raft's
// quorum datadriven tests: majorities, the committed index of a set of matches, election results — and
// that only the voters named count.
import { describe, expect, it } from 'vitest';
import { committedIndex, isMajority, quorumOf, voteResult } from '../../../src/raft/core/quorum.js';

describe('quorumOf', () => {
  it.each([
    [1, 1],
    [2, 2],
    [3, 2],
    [4, 3],
    [5, 3],
    [6, 4],
    [7, 4],
  ])('%i voters need %i', (n, q) => expect(quorumOf(n)).toBe(q));
});

describe('isMajority counts the voters named, nobody else', () => {
  const voters = ['a', 'b', 'c'];
  it.each([
    [[], false],
    [['a'], false],
    [['a', 'b'], true],
    [['b', 'c'], true],
    [['a', 'b', 'c'], true],
    // A learner's or a removed leader's agreement counts for nothing.
    [['a', 'x'], false],
    [['x', 'y', 'z'], false],
  ] as [string[], boolean][])('agreeing %j -> %s', (agree, want) => expect(isMajority(voters, (id) => agree.includes(id))).toBe(want));

  it('four voters need three; an even split is no majority', () => {
    expect(isMajority(['a', 'b', 'c', 'd'], (id) => id === 'a' || id === 'b')).toBe(false);
    expect(isMajority(['a', 'b', 'c', 'd'], (id) => id !== 'd')).toBe(true);
  });
});

describe('committedIndex: the highest index a majority holds', () => {
  const at = (m: Record<string, number>) => (id: string) => m[id] ?? 0;
  it.each([
    [['a'], { a: 7 }, 7],
    [['a', 'b', 'c'], { a: 10, b: 5, c: 1 }, 5],
    [['a', 'b', 'c'], { a: 10, b: 10, c: 1 }, 10],
    [['a', 'b', 'c'], { a: 10 }, 0],
    [['a', 'b', 'c', 'd'], { a: 9, b: 8, c: 7, d: 1 }, 7],
    [['a', 'b', 'c', 'd', 'e'], { a: 5, b: 4, c: 3, d: 2, e: 1 }, 3],
    // A non-voter's match is never asked for.
    [['b', 'c', 'd'], { a: 100, b: 4, c: 3, d: 2 }, 3],
    [[], {}, 0],
  ] as [string[], Record<string, number>, number][])('voters %j, matches %j -> %i', (voters, m, want) =>
    expect(committedIndex(voters, at(m))).toBe(want),
  );
});

describe('voteResult', () => {
  const votes = (m: Record<string, boolean>) => new Map(Object.entries(m));
  it.each([
    [{ a: true }, 'pending'],
    [{ a: true, b: true }, 'won'],
    [{ a: true, b: false }, 'pending'],
    [{ a: true, b: false, c: false }, 'lost'],
    [{ a: false, b: false }, 'lost'],
    // Votes from outside the configuration are ignored.
    [{ a: true, x: true, y: true }, 'pending'],
  ] as [Record<string, boolean>, string][])('votes %j of a, b, c -> %s', (v, want) =>
    expect(voteResult(['a', 'b', 'c'], votes(v))).toBe(want),
  );
});
