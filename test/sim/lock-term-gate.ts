// TERM GATE: a leader stamps nothing but its termStart until that termStart has applied on it in its own
// term (src/lock/leader/term-gate.ts; LEASES.md: a command judged against leases the new term has not
// carried over yet could cut one short, and the leader's own view — dedup, holders, the wait line — is
// only current once every earlier entry applied). The oracle's structural check ("the first lock entry of
// a term is its termStart") sees a removed gate only when a command overtakes the termStart in the log,
// which the leader's own proposal order almost never allows: 1 of lock seeds 1-1000 on the build of issue
// 22 (seed 539), 0 of 1,000 on an older one. This check reads the rule itself: every other entry of term N
// was stamped (true time, the stamp window's late end) no earlier than the moment term N's leader applied
// its termStart.
import type { LockCommand } from '../../src/lock/index.js';
import type { StampWindow } from './lock-invariants.js';

export class TermGateCheck {
  /** Term -> true time at which that term's leader applied its termStart while leading it. */
  private readonly readyAt = new Map<number, number>();

  /** A replica applied a termStart entry of `term`; `leading` says its node leads that very term now. */
  termStartApplied(term: number, leading: boolean, nowMs: number): void {
    if (leading && !this.readyAt.has(term)) this.readyAt.set(term, nowMs);
  }

  /** Why entry `at` of `term`, stamped in `stamp`, broke the gate, or null. */
  check(at: string, term: number, cmd: LockCommand, stamp: StampWindow): string | null {
    if (cmd.type === 'termStart') return null;
    const ready = this.readyAt.get(term);
    if (ready !== undefined && stamp.max >= ready) return null;
    return (
      `term gate: ${at} (${cmd.type}) was stamped by ${stamp.node}, leader of term ${term}, at true t=${stamp.max.toFixed(3)} — ` +
      `${ready === undefined ? 'its termStart has not applied on it yet' : `before its termStart applied on it at t=${ready.toFixed(3)}`}: ` +
      `a leader stamps commands only once its term has started (term-gate.ts)`
    );
  }
}
