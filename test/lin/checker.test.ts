// The checker must accept correct histories — including ones full of unknown outcomes — and must reject each
// kind of broken one. A checker that cannot fail is a defect (DESIGN "Tests"), so every rule has a bad history.
import { describe, expect, it } from 'vitest';
import { checkHistory, type AuditEntry, type ViolationKind } from './checker.js';
import { HistoryBuilder } from './fixtures.js';
import { historyFromJsonl, historyToJsonl, HistoryRecorder } from './history.js';

const K = 'k';

function kinds(h: HistoryBuilder, audit?: AuditEntry[]): ViolationKind[] {
  const v = checkHistory(h.ops, audit ? { resourceAudit: audit } : {});
  return [...new Set(v.violations.map((x) => x.kind))].sort();
}

/** A, then B after A released: the canonical clean run. */
function cleanHandover(): HistoryBuilder {
  const h = new HistoryBuilder();
  h.acquired('A', K, 5n, [0, 10], [10, 50]);
  h.write('A', K, 5n, [20, 22], true);
  h.renew('A', K, 'A/5', 5n, [25, 30]);
  h.release('A', K, 'A/5', 5n, [50, 60]);
  h.acquired('B', K, 9n, [61, 70], [70, 120]);
  h.write('B', K, 9n, [80, 81], true);
  h.get('C', K, [90, 95], { held: true, owner: 'B/9', token: 9n });
  h.release('B', K, 'B/9', 9n, [120, 125]);
  h.get('C', K, [130, 135], { held: false, last: 9n });
  return h;
}

describe('checker: valid histories pass', () => {
  it('a clean handover, with writes, a renew and Gets', () => {
    const v = checkHistory(cleanHandover().ops, {
      resourceAudit: [
        { resourceId: K, token: 5n, seq: 0 },
        { resourceId: K, token: 9n, seq: 1 },
      ],
    });
    expect(v.violations).toEqual([]);
    expect(v.valid).toBe(true);
    expect(v.windows).toBe(2);
    expect(v.linearizability[K]).toBe('ok');
  });

  it('two concurrent acquires: one wins, the other is refused naming the winner (either order of answers)', () => {
    const h = new HistoryBuilder();
    h.refused('B', K, 'A/5', [0, 8]); // answered first, but linearized after A's grant
    h.acquired('A', K, 5n, [0, 10]);
    expect(checkHistory(h.ops).violations).toEqual([]);
  });

  it('a holder that lost its lease: a newer holder follows; the zombie write is accepted before the newer write and refused after it', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 100]); // window closed by its local deadline at 100
    h.write('A', K, 5n, [20, 21], true);
    h.get('C', K, [140, 141], { held: false, last: 5n }); // the lease expired on the server
    h.acquired('B', K, 8n, [150, 160], [160, 300]);
    h.write('A', K, 5n, [161, 162], true, { active: false }); // zombie, before B wrote: fencing allows it
    h.write('B', K, 8n, [170, 171], true);
    h.write('A', K, 5n, [180, 181], false, { active: false, resourceLast: 8n }); // zombie after B wrote: refused
    h.renew('A', K, 'A/5', 5n, [182, 190], 'fail', 'WRONG_OWNER');
    h.release('A', K, 'A/5', 5n, [191, 195], 'fail', 'WRONG_OWNER');
    expect(
      checkHistory(h.ops, {
        resourceAudit: [
          { resourceId: K, token: 5n, seq: 0 },
          { resourceId: K, token: 5n, seq: 1 },
          { resourceId: K, token: 8n, seq: 2 },
        ],
      }).violations,
    ).toEqual([]);
  });

  it('an expired lease that no expire entry removed yet may still be released by its holder', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 100]);
    h.get('C', K, [120, 121], { held: false, last: 5n });
    h.release('A', K, 'A/5', 5n, [130, 135]);
    h.acquired('B', K, 7n, [140, 150]);
    expect(checkHistory(h.ops).violations).toEqual([]);
  });

  it("unknown outcomes ('info') are accepted either way", () => {
    // An acquire that timed out but DID take effect (a Get shows its owner), one that did not, an unknown
    // release that did not take effect (the holder still shows), and an unknown release that did.
    const h = new HistoryBuilder();
    h.acquireUnknown('A', K, 'A/x', [0, 3000]);
    h.get('C', K, [100, 110], { held: true, owner: 'A/x', token: 4n });
    h.refused('D', K, 'A/x', [120, 130]);
    h.release('A', K, 'A/x', 4n, [140, 2000], 'info');
    h.get('C', K, [200, 210], { held: true, owner: 'A/x', token: 4n });
    h.get('C', K, [3100, 3110], { held: false, last: 4n });
    h.acquireUnknown('B', K, 'B/y', [3200, 6000]); // never observed: may not have happened
    h.acquired('E', K, 12n, [3300, 3400]);
    h.release('E', K, 'E/12', 12n, [3500, 5000], 'info');
    h.acquired('F', K, 15n, [5100, 5200]); // fine whether E's release took effect or its lease expired
    const v = checkHistory(h.ops);
    expect(v.violations).toEqual([]);
    expect(v.counts['acquire']).toEqual({ ok: 2, fail: 1, info: 2 });
  });

  it('pending operations are closed as info, not failures', () => {
    const rec = new HistoryRecorder(() => 5);
    rec.invoke({ process: 'A', type: 'acquire', key: K, via: 'handle', owner: 'A/1' });
    expect(rec.closePending()).toBe(1);
    expect(rec.ops[0]!.outcome).toBe('info');
    expect(checkHistory(rec.ops).valid).toBe(true);
  });

  it('a history survives a JSON-lines round trip with its bigints', () => {
    const h = cleanHandover();
    const back = historyFromJsonl(historyToJsonl(h.ops));
    expect(back).toEqual(h.ops);
    expect(checkHistory(back).valid).toBe(true);
  });
});

describe('checker: broken histories fail', () => {
  it('(c) overlapping holders: two windows on one key intersect', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 100]);
    h.acquired('B', K, 9n, [60, 70], [70, 200]); // acknowledged while A's window is still open
    expect(kinds(h)).toEqual(['overlap']);
  });

  it('(c) windows that only touch do not overlap; one that starts a millisecond early does', () => {
    const ok = new HistoryBuilder();
    ok.acquired('A', K, 5n, [0, 10], [10, 100]);
    ok.acquired('B', K, 9n, [95, 100], [100, 200]);
    expect(kinds(ok)).toEqual([]);
    const bad = new HistoryBuilder();
    bad.acquired('A', K, 5n, [0, 10], [10, 100]);
    bad.acquired('B', K, 9n, [95, 99], [99, 200]);
    expect(kinds(bad)).toEqual(['overlap']);
  });

  it('(a) token reuse: the same token granted twice', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.release('A', K, 'A/5', 5n, [50, 55]);
    h.acquired('B', K, 5n, [60, 70], [70, 90], 'B/1');
    expect(kinds(h)).toContain('token-reuse');
  });

  it('(a) a token lower than one acknowledged before', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 9n, [0, 10], [10, 50]);
    h.release('A', K, 'A/9', 9n, [50, 55]);
    h.acquired('B', K, 5n, [60, 70], [70, 90]);
    expect(kinds(h)).toEqual(['linearizability', 'token-order']);
  });

  it('(a) a Get that reads an older last_token than a token already acknowledged (stale read)', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.release('A', K, 'A/5', 5n, [50, 55]);
    h.acquired('B', K, 9n, [60, 70], [70, 90]);
    h.release('B', K, 'B/9', 9n, [90, 95]);
    h.get('C', K, [100, 105], { held: false, last: 5n });
    expect(kinds(h)).toEqual(['get-stale', 'linearizability']);
  });

  it('(b) the resource accepted a token lower than one it had accepted before (its own commit log)', () => {
    const h = cleanHandover();
    expect(
      kinds(h, [
        { resourceId: K, token: 9n, seq: 0 },
        { resourceId: K, token: 5n, seq: 1 },
      ]),
    ).toEqual(['fence-regression']);
  });

  it('(b) a stale write accepted: an old token wrote after a newer token had written', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.acquired('B', K, 9n, [60, 70], [70, 200]);
    h.write('B', K, 9n, [80, 81], true);
    h.write('A', K, 5n, [90, 91], true, { active: false }); // the zombie's write must have been refused
    expect(kinds(h)).toEqual(['stale-write-accepted']);
  });

  it('(b) a write rejected while its handle was ACTIVE, and a rejection the resource had no grounds for', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.write('A', K, 5n, [20, 21], false, { resourceLast: 3n });
    expect(kinds(h)).toEqual(['active-write-rejected', 'fence-wrong-reject']);
  });

  it('(b) a write accepted with a token no acquire produced', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.write('X', K, 7n, [20, 21], true, { active: false });
    expect(kinds(h)).toEqual(['unknown-token']);
  });

  it('(d) a release acknowledged for a token already superseded by a newer acquire', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.acquired('B', K, 9n, [100, 110], [110, 300]);
    h.release('A', K, 'A/5', 5n, [120, 125]); // A's zombie release "succeeded": it freed B's lock
    expect(kinds(h)).toEqual(['linearizability', 'non-holder-release']);
  });

  it('(d) a renew acknowledged after the release of that token', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.release('A', K, 'A/5', 5n, [50, 55]);
    h.renew('A', K, 'A/5', 5n, [60, 65]);
    expect(kinds(h)).toEqual(['linearizability', 'non-holder-renew']);
  });

  it('(d) a renew acknowledged for an owner+token no acquire produced', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.renew('A', K, 'A/5', 6n, [20, 25]);
    expect(kinds(h)).toEqual(['linearizability', 'unknown-token']);
  });

  it('linearizability alone: a refusal naming a holder that had released, with nothing else wrong', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.release('A', K, 'A/5', 5n, [50, 55]);
    h.refused('B', K, 'A/5', [60, 65]); // the key was free: wait_ms 0 must have won
    const v = checkHistory(h.ops);
    expect(v.violations.map((x) => x.kind)).toEqual(['linearizability']);
    expect(v.violations[0]!.ops).toEqual([2]);
  });

  it('linearizability alone: a Get showing a live holder after another Get saw the lease expire', () => {
    const h = new HistoryBuilder();
    h.acquired('A', K, 5n, [0, 10], [10, 50]);
    h.get('C', K, [100, 101], { held: false, last: 5n });
    h.get('C', K, [110, 111], { held: true, owner: 'A/5', token: 5n }); // expiry is not undone
    expect(kinds(h)).toEqual(['linearizability']);
  });

  it('a refused acquire that took effect later (a late duplicate of a retried request): its own kind, and the rest still checked', () => {
    const h = new HistoryBuilder();
    h.acquired('B', K, 3n, [0, 10], [10, 100]);
    h.refused('A', K, 'B/3', [20, 600], 'A/1'); // one attempt was refused...
    h.release('B', K, 'B/3', 3n, [100, 110]);
    h.get('C', K, [800, 805], { held: true, owner: 'A/1', token: 6n }); // ...another, delivered late, was granted
    h.refused('D', K, 'A/1', [810, 815]);
    expect(kinds(h)).toEqual(['refused-took-effect']);
    // A later, unrelated anomaly on the same key is still found by the linearizability search.
    h.get('C', K, [900, 905], { held: false, last: 2n });
    expect(kinds(h)).toEqual(['get-stale', 'linearizability', 'refused-took-effect']);
  });

  it('a refused acquire that names ITSELF as the holder: an earlier attempt was granted, the retry refused', () => {
    const h = new HistoryBuilder();
    h.refused('A', K, 'A/1', [0, 2000], 'A/1');
    const v = checkHistory(h.ops);
    expect(v.violations.map((x) => x.kind)).toEqual(['refused-took-effect']);
    expect(v.violations[0]!.message).toMatch(/by ITSELF/);
  });

  it('(e) an unknown acquire does not excuse a phantom holder: a refusal naming an owner that never asked', () => {
    const h = new HistoryBuilder();
    h.acquireUnknown('A', K, 'A/x', [0, 100]);
    h.refused('B', K, 'Z/1', [10, 20]);
    expect(kinds(h)).toEqual(['linearizability']);
  });

  it('(e) an unknown acquire cannot be observed before it was invoked', () => {
    const h = new HistoryBuilder();
    h.get('C', K, [0, 5], { held: true, owner: 'A/x', token: 4n });
    h.acquireUnknown('A', K, 'A/x', [10, 100]);
    expect(kinds(h)).toEqual(['linearizability', 'unknown-token']);
  });
});

describe('checker: lease-cut-short (no lease ended before its TTL by true time)', () => {
  const TTL = 1000; // owed until send + 1000 - 20 (2 % margin)
  const ttl = <T extends { ttlMs?: number }>(op: T, ttlMs = TTL): T => Object.assign(op, { ttlMs });
  const check = (h: HistoryBuilder, leaseTtl = true) => checkHistory(h.ops, { leaseTtl });
  const cutShort = (h: HistoryBuilder) => check(h).violations.filter((v) => v.kind === 'lease-cut-short');

  /** A's renew is refused at 500 (the server expired it early), so its window closes; B is granted at 610. */
  function cutByServerClock(): HistoryBuilder {
    const h = new HistoryBuilder();
    ttl(h.acquired('A', K, 5n, [0, 10], [10, 500]));
    ttl(h.renew('A', K, 'A/5', 5n, [300, 500], 'fail', 'EXPIRED'));
    ttl(h.acquired('B', K, 9n, [600, 610], [610, 700]));
    return h;
  }

  it('a lease cut short by true time is caught, and only this rule catches it', () => {
    const v = check(cutByServerClock());
    expect(v.violations.map((x) => x.kind)).toEqual(['lease-cut-short']);
    expect(v.violations[0]!.ops).toEqual([0, 1]); // the first sign: the refused renew, 480 ms early
    expect(v.violations[0]!.message).toMatch(/480\.0 ms before/);
    expect(v.leasesChecked).toBe(2);
    // With the rule off, nothing else sees it: the windows do not overlap and every token is in order.
    const off = check(cutByServerClock(), false);
    expect(off.violations).toEqual([]);
    expect(off.leasesChecked).toBe(0);
  });

  it('a second grant acknowledged inside the first lease is caught even when the holder never noticed', () => {
    const h = new HistoryBuilder();
    ttl(h.acquired('A', K, 5n, [0, 10], [10, 400])); // A stopped using it at 400 without releasing
    ttl(h.acquired('B', K, 9n, [600, 700]));
    expect(cutShort(h).map((v) => v.ops)).toEqual([[0, 1]]);
  });

  it('a Get that shows the key free inside the lease is caught; one concurrent with the grant is not', () => {
    const h = new HistoryBuilder();
    ttl(h.acquired('A', K, 5n, [0, 10], [10, 400]));
    h.get('C', K, [5, 15], { held: false, last: 0n }); // may be ordered before the grant
    expect(cutShort(h)).toEqual([]);
    h.get('C', K, [500, 510], { held: false, last: 5n });
    expect(cutShort(h).map((v) => v.ops)).toEqual([[0, 2]]);
  });

  it('a legitimate early release (acknowledged, or of unknown outcome) frees the key at once', () => {
    for (const outcome of ['ok', 'info'] as const) {
      const h = new HistoryBuilder();
      ttl(h.acquired('A', K, 5n, [0, 10], [10, 50]));
      h.release('A', K, 'A/5', 5n, [50, 60], outcome);
      ttl(h.acquired('B', K, 9n, [55, 70]));
      h.get('C', K, [80, 90], { held: true, owner: 'B/9', token: 9n });
      expect(check(h).violations, outcome).toEqual([]);
    }
    // A refused release frees nothing: the lease is still owed.
    const h = new HistoryBuilder();
    ttl(h.acquired('A', K, 5n, [0, 10], [10, 50]));
    h.release('A', K, 'A/5', 5n, [50, 60], 'fail', 'NOT_HELD');
    ttl(h.acquired('B', K, 9n, [55, 70]));
    expect(cutShort(h).map((v) => v.ops)).toEqual([[0, 2]]);
  });

  it('an acknowledged renew extends what is owed; a renew of unknown outcome does not', () => {
    const renewed = (bAt: [number, number], renewOutcome: 'ok' | 'info' = 'ok') => {
      const h = new HistoryBuilder();
      ttl(h.acquired('A', K, 5n, [0, 10], [10, 1780]));
      ttl(h.renew('A', K, 'A/5', 5n, [800, 810], renewOutcome));
      ttl(h.acquired('B', K, 9n, bAt));
      return h;
    };
    expect(check(renewed([1790, 1800])).violations).toEqual([]); // after 800 + 1000 - 20
    expect(cutShort(renewed([1500, 1510])).map((v) => v.ops)).toEqual([[0, 2]]); // inside the renewed lease
    expect(cutShort(renewed([1500, 1510], 'info'))).toEqual([]); // only the acquire's 980 ms are certain
  });

  it('an expiry exactly at the TTL is not caught; one a millisecond inside the margin is', () => {
    const at = (bDoneMs: number) => {
      const h = new HistoryBuilder();
      ttl(h.acquired('A', K, 5n, [0, 10], [10, 980]));
      ttl(h.acquired('B', K, 9n, [bDoneMs - 5, bDoneMs]));
      return h;
    };
    expect(check(at(1000)).violations).toEqual([]); // at the TTL
    expect(check(at(980)).violations).toEqual([]); // at the client's conservative deadline (ttl - 2 %)
    expect(cutShort(at(979)).map((v) => v.ops)).toEqual([[0, 1]]);
  });
});

describe('checker: fifo-order (grants in the order the log queued the waiters)', () => {
  /** H holds; A queues (its QUEUED seen at 20); B is sent at `bSentMs`; then B and A are granted, tokens as given. */
  function line(bSentMs: number, tokens: { a: bigint; b: bigint }, aOutcome: 'ok' | 'fail' = 'ok'): HistoryBuilder {
    const h = new HistoryBuilder();
    h.acquired('H', K, 5n, [0, 5], [5, 50]);
    h.release('H', K, 'H/5', 5n, [50, 55]);
    const first = tokens.b < tokens.a ? 'b' : 'a';
    const grant = (who: 'a' | 'b', at: [number, number], w: [number, number]) => {
      if (who === 'a') {
        if (aOutcome === 'ok') Object.assign(h.acquired('A', K, tokens.a, [10, at[1]], w, 'A/w'), { waitMs: 500 });
        else Object.assign(h.refused('A', K, '', [10, at[1]], 'A/w'), { waitMs: 500 });
      } else h.acquired('B', K, tokens.b, [bSentMs, at[1]], w, 'B/w');
    };
    h.queued(K, 'A/w', 20, 12n);
    grant(first, [0, 60], [60, 80]);
    h.release(first === 'a' ? 'A' : 'B', K, first === 'a' ? 'A/w' : 'B/w', first === 'a' ? tokens.a : tokens.b, [80, 85]);
    grant(first === 'a' ? 'b' : 'a', [0, 90], [90, 150]);
    return h;
  }

  it('a newcomer sent after the waiter was seen in line, granted before it: fifo-order, and nothing else sees it', () => {
    const v = checkHistory(line(30, { a: 9n, b: 7n }).ops);
    expect(v.violations.map((x) => x.kind)).toEqual(['fifo-order']);
    expect(v.violations[0]!.message).toMatch(/QUEUED at log index 12/);
    expect(v.lockModel.fifoPairs).toBe(1);
  });

  it('no alarm when the newcomer was sent before the QUEUED event was seen, when the waiter went first, or was refused', () => {
    expect(checkHistory(line(15, { a: 9n, b: 7n }).ops).violations).toEqual([]); // B's entry may precede A's
    expect(checkHistory(line(30, { a: 7n, b: 9n }).ops).violations).toEqual([]);
    expect(checkHistory(line(30, { a: 9n, b: 7n }, 'fail').ops).violations).toEqual([]); // A left the line (deadline)
  });

  it('a waiter that joined again (its call was cancelled — a reset connection — and its retry joined anew) is judged by its last join', () => {
    // Chaos seed 2026: A QUEUED at 20, its call cancelled and its place given up; B sent at 30; A joins again at
    // 40, after B: B granted first is FIFO. Judged by A's first join this was a false alarm.
    const rejoined = line(30, { a: 9n, b: 7n });
    rejoined.queued(K, 'A/w', 40, 14n);
    expect(checkHistory(rejoined.ops).violations).toEqual([]);
    // Its last join before B was sent still binds B.
    const early = line(30, { a: 9n, b: 7n });
    early.queued(K, 'A/w', 25, 13n);
    expect(checkHistory(early.ops).violations.map((x) => x.kind)).toEqual(['fifo-order']);
    expect(checkHistory(early.ops).violations[0]!.message).toMatch(/last join QUEUED at log index 13/);
  });

  it("no judgement where the queue watch had a gap between the waiter's last seen join and its grant (a later join may be unseen)", () => {
    const h = line(30, { a: 9n, b: 7n });
    h.watchGap(35, 45);
    const v = checkHistory(h.ops);
    expect(v.violations).toEqual([]);
    expect(v.lockModel.fifoPairs).toBe(0);
    // A gap after the grant changes nothing.
    const late = line(30, { a: 9n, b: 7n });
    late.watchGap(200, 210);
    expect(checkHistory(late.ops).violations.map((x) => x.kind)).toEqual(['fifo-order']);
  });
});

describe('checker: session-end (nothing shows a session alive after it was seen ended)', () => {
  const S = 3n;
  /** A session S holds K with token 5 and is closed (acknowledged at 110). */
  function closed(): HistoryBuilder {
    const h = new HistoryBuilder();
    h.openSession('A', 'A/5', S, [0, 10], 1000);
    Object.assign(h.acquired('A', K, 5n, [10, 20], [20, 100]), { sessionId: S });
    h.closeSession('A', 'A/5', S, [100, 110]);
    return h;
  }
  const showsHold = (h: HistoryBuilder, at: [number, number]) =>
    Object.assign(h.get('C', K, at, { held: true, owner: 'A/5', token: 5n }), { getSessionId: S });

  it('a Get sent after the close was acknowledged shows its hold: session-end; one sent before the answer came does not', () => {
    const bad = closed();
    showsHold(bad, [120, 125]);
    const v = checkHistory(bad.ops);
    expect(v.violations.map((x) => x.kind)).toEqual(['session-end']);
    expect(v.lockModel.sessionsEnded).toBe(1);
    const good = closed();
    showsHold(good, [105, 125]);
    expect(checkHistory(good.ops).violations).toEqual([]);
  });

  it('a refused renew ends it: a later acknowledged renew, or a refusal naming its owner, is session-end', () => {
    const h = new HistoryBuilder();
    h.openSession('A', 'A/5', S, [0, 10], 1000);
    Object.assign(h.acquired('A', K, 5n, [10, 20], [20, 100]), { sessionId: S });
    h.renewSession('A', 'A/5', S, [300, 1200], 'fail', 'EXPIRED');
    expect(checkHistory(h.ops).violations).toEqual([]);
    h.renewSession('A', 'A/5', S, [1210, 1220]);
    h.refused('B', K, 'A/5', [1230, 1240]);
    expect(kinds(h)).toEqual(['session-end']);
    expect(checkHistory(h.ops).violations.map((x) => x.ops)).toEqual([
      [2, 3],
      [2, 4],
    ]);
    // A refusal from WRONG_OWNER says nothing about the session's end.
    const w = new HistoryBuilder();
    w.openSession('A', 'A/5', S, [0, 10], 1000);
    w.renewSession('A', 'A/5', S, [300, 310], 'fail', 'WRONG_OWNER');
    w.renewSession('A', 'A/5', S, [400, 410]);
    expect(checkHistory(w.ops).violations).toEqual([]);
  });

  it('a waiter of the session granted after it ended: its token is newer than one the log issued after the end', () => {
    const waiter = (waiterToken: bigint) => {
      const h = closed();
      Object.assign(h.acquired('A', 'k2', waiterToken, [50, 400], [400, 450], 'A/5'), { sessionId: S, waitMs: 1000 });
      h.acquired('C', 'k2', 10n, [150, 160], [160, 200]);
      h.release('C', 'k2', 'C/10', 10n, [200, 205]);
      return h;
    };
    expect(kinds(waiter(12n))).toEqual(['session-end']);
    expect(checkHistory(waiter(9n).ops).violations).toEqual([]); // granted (token 9) before C: may be before the end
  });
});

describe('checker: lock-delay (a run-out hold keeps the key from everybody for its delay)', () => {
  const withTtl = <T extends { ttlMs?: number }>(op: T, ttlMs = 1000): T => Object.assign(op, { ttlMs });
  /** A holds K (ttl 1000, lock-delay 500; owed until 980, the delay until 1000 + 500 - 30 = 1470) and never releases it. */
  function ranOut(
    bAt: [number, number],
    opts: { lockDelayMs?: number; release?: 'ok' | 'info'; renew?: 'ok' | 'info' } = {},
  ): HistoryBuilder {
    const h = new HistoryBuilder();
    Object.assign(
      withTtl(h.acquired('A', K, 5n, [0, 10], [10, 480])),
      opts.lockDelayMs === 0 ? {} : { lockDelayMs: opts.lockDelayMs ?? 500 },
    );
    if (opts.release) h.release('A', K, 'A/5', 5n, [500, 510], opts.release);
    if (opts.renew) withTtl(h.renew('A', K, 'A/5', 5n, [800, 810], opts.renew));
    withTtl(h.acquired('B', K, 9n, bAt));
    return h;
  }

  it('a grant after the lease but inside the delay is lock-delay (and lease-cut-short stays quiet)', () => {
    const v = checkHistory(ranOut([1000, 1100]).ops);
    expect(v.violations.map((x) => x.kind)).toEqual(['lock-delay']);
    expect(v.violations[0]!.message).toMatch(/to nobody until 1470\.0 ms/);
    expect(v.lockModel.lockDelayHolds).toBe(1);
    expect(kinds(ranOut([1465, 1469]))).toEqual(['lock-delay']);
  });

  it('no alarm at the end of the delay, without a delay, after a release (acknowledged or unknown)', () => {
    expect(checkHistory(ranOut([1470, 1475]).ops).violations).toEqual([]);
    expect(checkHistory(ranOut([1000, 1100], { lockDelayMs: 0 }).ops).violations).toEqual([]);
    expect(checkHistory(ranOut([600, 610], { release: 'ok' }).ops).violations).toEqual([]);
    expect(checkHistory(ranOut([600, 610], { release: 'info' }).ops).violations).toEqual([]);
  });

  it('an acknowledged renew moves the delay on; one of unknown outcome does not', () => {
    expect(kinds(ranOut([2000, 2010], { renew: 'ok' }))).toEqual(['lock-delay']); // owed until 800 + 1500 - 30
    expect(checkHistory(ranOut([2000, 2010], { renew: 'info' }).ops).violations).toEqual([]);
  });

  it("a session's lock-delay: counted from its last acknowledged renew; a close sent excuses it", () => {
    const session = (close: boolean) => {
      const h = new HistoryBuilder();
      h.openSession('A', 'A/5', 4n, [0, 10], 1000, 500);
      Object.assign(h.acquired('A', K, 5n, [10, 20], [20, 600]), { sessionId: 4n });
      h.renewSession('A', 'A/5', 4n, [300, 310], 'ok', undefined, 1000);
      if (close) h.closeSession('A', 'A/5', 4n, [400, 5000], 'info');
      withTtl(h.acquired('B', K, 9n, [1500, 1510])); // after 300 + 980, before 300 + 1470
      return h;
    };
    expect(kinds(session(false))).toEqual(['lock-delay']);
    expect(checkHistory(session(true).ops).violations).toEqual([]);
  });

  it('a release or close sent after the server said the hold had run out excuses nothing: it ends the hold as expired', () => {
    // A's renew is refused EXPIRED at 1010; its release, sent after that, applies to a run-out lease.
    const late = (releaseAt: [number, number]) => {
      const h = ranOut([1100, 1110]);
      withTtl(h.renew('A', K, 'A/5', 5n, [1000, 1010], 'fail', 'EXPIRED'));
      h.release('A', K, 'A/5', 5n, releaseAt, 'ok');
      return h;
    };
    expect(kinds(late([1020, 1030]))).toEqual(['lock-delay']);
    // Sent before that answer came, it may have applied while the lease lived (a failover extends it).
    expect(checkHistory(late([990, 1030]).ops).violations).toEqual([]);

    const session = (closeAt: [number, number]) => {
      const h = new HistoryBuilder();
      h.openSession('A', 'A/5', 4n, [0, 10], 1000, 500);
      Object.assign(h.acquired('A', K, 5n, [10, 20], [20, 600]), { sessionId: 4n });
      h.renewSession('A', 'A/5', 4n, [1000, 1010], 'fail', 'EXPIRED');
      h.closeSession('A', 'A/5', 4n, closeAt, 'ok');
      withTtl(h.acquired('B', K, 9n, [1100, 1110])); // after 0 + 980, before 0 + 1470
      return h;
    };
    expect(kinds(session([1020, 1030]))).toEqual(['lock-delay']);
    expect(checkHistory(session([990, 1030]).ops).violations).toEqual([]);
  });
});
