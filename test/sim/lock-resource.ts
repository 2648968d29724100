// The protected resource of the lock simulation: it keeps, per key, the highest fencing token it has
// accepted and takes a write only with a token >= that (the same holder may write many times with its own
// token — the 'accept' policy of src/fencing; every OLDER token is refused once a newer one wrote).
//
// The resource is also a witness. Every write is tagged by the simulated client:
//  - honest: the client believes it holds the lock right now (its own conservative deadline has not passed);
//  - stale: a paused client writing with the token it checked before the pause (the article's GC pause).
// A refused stale write is fencing doing its job. A refused HONEST write means a newer token was accepted
// while this client still believed it held the lock — two holders at once; and one token accepted from two
// different owners means a token was issued twice. Both are reported.
//
// Keys with many holds (holds.ts) fence by mode. A shared hold's write is refused once a newer EXCLUSIVE
// token wrote; an exclusive one's once any newer token wrote (the mutex rule). A semaphore's holds live
// side by side with tokens in any order, so no watermark can fence them ('slot': always taken, counted by
// the clients' real-time check instead); their tokens must still each come from one owner.

export interface ResourceWrite {
  key: string;
  token: bigint;
  owner: string;
  /** True ms. */
  at: number;
  honest: boolean;
  accepted: boolean;
}

/** How a write is fenced: a mutex or exclusive hold, a shared one, a semaphore's slot. */
export type WriteMode = 'exclusive' | 'shared' | 'slot';

export class SimFencedResource {
  private readonly lastToken = new Map<string, bigint>();
  /** Per key, the highest token an exclusive hold (or a mutex) wrote with. */
  private readonly lastExclusive = new Map<string, bigint>();
  /** `${key}#${token}` -> the owner whose write with that token was accepted first. */
  private readonly tokenOwner = new Map<string, string>();
  readonly stats = { honestAccepted: 0, staleAccepted: 0, staleRejected: 0 };
  /** The last few writes, for violation messages. */
  readonly recent: ResourceWrite[] = [];
  violation: string | null = null;

  /** The atomic check-and-write. Returns whether the write was taken. */
  write(key: string, token: bigint, owner: string, at: number, honest: boolean, mode: WriteMode = 'exclusive'): boolean {
    const last = mode === 'shared' ? (this.lastExclusive.get(key) ?? 0n) : mode === 'slot' ? 0n : (this.lastToken.get(key) ?? 0n);
    const accepted = token >= last;
    const w: ResourceWrite = { key, token, owner, at, honest, accepted };
    this.recent.push(w);
    if (this.recent.length > 16) this.recent.shift();
    if (!accepted) {
      if (honest) {
        this.fail(
          `fencing: ${owner}'s write to ${key} with token ${token} was refused at t=${at.toFixed(2)} — token ${last} had already been accepted while ${owner} still believed it held the lock${mode === 'shared' ? ' (an exclusive hold wrote while this shared one was held)' : ''}`,
        );
      } else {
        this.stats.staleRejected++;
      }
      return false;
    }
    const id = `${key}#${token}`;
    const first = this.tokenOwner.get(id);
    if (first === undefined) this.tokenOwner.set(id, owner);
    else if (first !== owner)
      this.fail(
        `fencing: token ${token} of ${key} was accepted from two owners, ${first} and then ${owner} — one token issued to two holders`,
      );
    if (token > (this.lastToken.get(key) ?? 0n)) this.lastToken.set(key, token);
    if (mode === 'exclusive' && token > (this.lastExclusive.get(key) ?? 0n)) this.lastExclusive.set(key, token);
    if (honest) this.stats.honestAccepted++;
    else this.stats.staleAccepted++;
    return true;
  }

  last(key: string): bigint {
    return this.lastToken.get(key) ?? 0n;
  }

  private fail(message: string): void {
    if (this.violation !== null) return;
    const tail = this.recent
      .map((w) => `${w.owner}:${w.key}#${w.token}@${w.at.toFixed(1)}${w.honest ? '' : '(stale)'}${w.accepted ? '' : ' REFUSED'}`)
      .join(', ');
    this.violation = `${message}; recent writes: ${tail}`;
  }
}
