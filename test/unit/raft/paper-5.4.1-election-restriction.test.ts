// Raft paper §5.4.1 "Election restriction": a vote is granted only to a candidate whose log is at least
// as up to date as the voter's — compare the last term first, then the last index. (DESIGN.md: comparing
// only the last index is a known bug of JavaScript Raft libraries.)
import { describe, expect, it } from 'vitest';
import type { RequestVote } from '../../../src/raft/core/types.js';
import { Network, TestNode, entriesOfTerms, ofType } from './harness.js';

/** Voter b with log terms [1, 1, 2] (last index 3, last term 2), current term 2, no vote, no leader. */
function voter(preVote = false): TestNode {
  const b = new TestNode('b', ['a', 'b', 'c'], (c) => {
    c.preVote = preVote;
  });
  b.load({ entries: entriesOfTerms([1, 1, 2]), hardState: { term: 2, votedFor: null, commitIndex: 0 } });
  return b;
}

function ask(b: TestNode, lastLogIndex: number, lastLogTerm: number, preVote = false) {
  const m: RequestVote = { type: 'RequestVote', from: 'c', to: 'b', term: 3, preVote, lastLogIndex, lastLogTerm, transfer: false };
  b.raft.step(m);
  const res = ofType(b.drain(), 'RequestVoteResponse');
  expect(res).toHaveLength(1);
  return res[0]!;
}

describe('Raft §5.4.1 election restriction', () => {
  const cases: [string, number, number, boolean][] = [
    // [what, candidate lastLogIndex, candidate lastLogTerm, granted]
    ['longer log but lower last term is refused', 10, 1, false],
    ['higher last term but shorter log is granted', 1, 3, true],
    ['same last term, shorter log is refused', 2, 2, false],
    ['same last term, same length is granted', 3, 2, true],
    ['same last term, longer log is granted', 4, 2, true],
    ['empty log is refused', 0, 0, false],
  ];
  for (const [what, idx, term, granted] of cases) {
    it(`§5.4.1 ${what} (candidate last ${term}@${idx} vs voter 2@3)`, () => {
      const b = voter();
      const res = ask(b, idx, term);
      expect(res).toMatchObject({ from: 'b', to: 'c', term: 3, granted, preVote: false });
      // The term moved to 3 either way; votedFor only when granted — and it is durable with the answer.
      expect(b.durable.hardState).toEqual({ term: 3, votedFor: granted ? 'c' : null, commitIndex: 0 });
    });
    it(`§5.4.1 (pre-vote) ${what}`, () => {
      const b = voter(true);
      const res = ask(b, idx, term, true);
      expect(res).toMatchObject({ granted, preVote: true });
      // A pre-vote changes nothing durable.
      expect(b.durable.hardState).toEqual({ term: 2, votedFor: null, commitIndex: 0 });
    });
  }

  it('§5.4.1 a node that missed committed entries cannot become leader; an up-to-date one can', () => {
    const net = new Network(['a', 'b', 'c'], (c) => {
      c.checkQuorum = false;
    });
    const [a, b, c] = ['a', 'b', 'c'].map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    net.elect('a');
    net.cutLink('a', 'c');
    net.propose('a', 'x');
    net.tick(['a']);
    expect(a.raft.status().commitIndex).toBe(2);
    expect(c.raft.status().lastIndex).toBe(1);
    // a crashes for good; c (missing committed index 2) times out again and again: b never votes for it.
    net.isolate('a');
    net.tick(['c'], 100);
    expect(c.raft.role).not.toBe('leader');
    expect(ofType(net.log, 'RequestVoteResponse').filter((m) => m.from === 'b' && m.to === 'c' && m.granted)).toHaveLength(0);
    // b, which holds index 2, wins with c's vote and c learns the committed entry.
    net.elect('b');
    expect(b.raft.role).toBe('leader');
    net.tick(['b']);
    expect(c.appliedData()).toEqual(['x']);
  });
});
