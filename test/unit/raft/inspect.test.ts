// The core's read-only inspection (src/raft/core/inspect.ts), which the simulator's invariants read instead
// of the core's private fields: it reports what the core holds, and nothing done with what it returns
// changes the core.
import { describe, expect, it } from 'vitest';
import { Network, enc } from './harness.js';

function steady() {
  const net = new Network(['a', 'b', 'c']);
  net.elect('a');
  net.tickAll(1);
  net.propose('a', 'x');
  net.settle();
  return net;
}

describe('Raft.inspect()', () => {
  it('reports term, vote, role, leader, commit and the log bounds as status() does', () => {
    const net = steady();
    for (const id of ['a', 'b']) {
      const raft = net.node(id).raft;
      const st = raft.status();
      const b = raft.inspect().basic();
      expect(b).toMatchObject({
        id,
        term: st.term,
        role: st.role,
        leaderId: 'a',
        commitIndex: st.commitIndex,
        appliedIndex: st.appliedIndex,
        firstIndex: st.firstIndex,
        lastIndex: st.lastIndex,
        durableIndex: st.durableIndex,
        leadTransferee: null,
      });
    }
    // Everyone voted for the leader in its term.
    expect(net.node('b').raft.inspect().basic().votedFor).toBe('a');
    expect(net.node('a').raft.inspect().basic().commitIndex).toBeGreaterThan(0);
  });

  it('looks up terms and entries, and nothing beyond the log', () => {
    const raft = steady().node('a').raft;
    const core = raft.inspect();
    const last = core.basic().lastIndex;
    const e = core.entryAt(last)!;
    expect(e).toMatchObject({ index: last, term: raft.term, kind: 'normal' });
    expect(new TextDecoder().decode(e.data)).toBe('x');
    expect(core.termAt(last)).toBe(raft.term);
    expect(core.termAt(0)).toBe(0); // the bootstrap snapshot's
    expect(core.termAt(last + 1)).toBeUndefined();
    expect(core.entryAt(last + 1)).toBeUndefined();
    expect(core.entryAt(0)).toBeUndefined(); // the snapshot's index holds no entry
  });

  it('is live: a later read sees what the core did since', () => {
    const net = steady();
    const core = net.node('a').raft.inspect();
    const before = core.basic().lastIndex;
    net.propose('a', 'y');
    net.settle();
    expect(core.basic().lastIndex).toBe(before + 1);
    expect(core.basic().commitIndex).toBe(before + 1);
  });

  it('shows a leadership transfer under way', () => {
    const net = steady();
    net.isolate('c'); // c cannot catch up, so the transfer stays pending
    net.propose('a', 'z');
    net.settle();
    const a = net.node('a').raft;
    expect(a.transferLeadership('c')).toBe(true);
    expect(a.inspect().basic().leadTransferee).toBe('c');
  });

  it('gives copies: changing what it returned changes nothing in the core', () => {
    const net = steady();
    const raft = net.node('a').raft;
    const core = raft.inspect();
    const last = core.basic().lastIndex;
    core.entryAt(last)!.data.set(enc('Q'));
    expect(new TextDecoder().decode(core.entryAt(last)!.data)).toBe('x');
    const confs = core.configurations();
    expect(confs.map((c) => c.index)).toEqual([0]);
    expect(confs[0]!.conf.voters).toEqual(['a', 'b', 'c']);
    confs[0]!.conf.voters.push('intruder');
    core.configurationAt(last).voters.pop();
    expect(core.configurations()[0]!.conf.voters).toEqual(['a', 'b', 'c']);
    expect(raft.status().conf.voters).toEqual(['a', 'b', 'c']);
    // No field of the inspection leads back into the core.
    expect(Object.keys(core)).toEqual([]);
  });

  it('lists the configuration entries the log holds after its snapshot, and which is in force where', () => {
    const net = steady();
    const r = net.node('a').raft.proposeConfChange({ type: 'add', id: 'd', address: 'd:7000', learner: true });
    expect(r.ok).toBe(true);
    const index = r.ok ? r.index : -1;
    const core = net.node('a').raft.inspect();
    const confs = core.configurations();
    expect(confs.map((c) => c.index)).toEqual([0, index]);
    expect(confs[1]!.conf.learners).toEqual(['d']);
    expect(core.configurationAt(index - 1).learners).toEqual([]);
    expect(core.configurationAt(index).learners).toEqual(['d']);
  });
});
