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

export interface ResourceWrite {
  key: string;
  token: bigint;
  owner: string;
  /** True ms. */
  at: number;
  honest: boolean;
  accepted: boolean;
}

export class SimFencedResource {
  private readonly lastToken = new Map<string, bigint>();
  /** `${key}#${token}` -> the owner whose write with that token was accepted first. */
  private readonly tokenOwner = new Map<string, string>();
  readonly stats = { honestAccepted: 0, staleAccepted: 0, staleRejected: 0 };
  /** The last few writes, for violation messages. */
  readonly recent: ResourceWrite[] = [];
  violation: string | null = null;

  /** The atomic check-and-write. Returns whether the write was taken. */
  write(key: string, token: bigint, owner: string, at: number, honest: boolean): boolean {
    const last = this.lastToken.get(key) ?? 0n;
    const accepted = token >= last;
    const w: ResourceWrite = { key, token, owner, at, honest, accepted };
    this.recent.push(w);
    if (this.recent.length > 16) this.recent.shift();
    if (!accepted) {
      if (honest) {
        this.fail(`fencing: ${owner}'s write to ${key} with token ${token} was refused at t=${at.toFixed(2)} — token ${last} had already been accepted while ${owner} still believed it held the lock`);
      } else {
        this.stats.staleRejected++;
      }
      return false;
    }
    const id = `${key}#${token}`;
    const first = this.tokenOwner.get(id);
    if (first === undefined) this.tokenOwner.set(id, owner);
    else if (first !== owner) this.fail(`fencing: token ${token} of ${key} was accepted from two owners, ${first} and then ${owner} — one token issued to two holders`);
    this.lastToken.set(key, token);
    if (honest) this.stats.honestAccepted++;
    else this.stats.staleAccepted++;
    return true;
  }

  last(key: string): bigint {
    return this.lastToken.get(key) ?? 0n;
  }

  private fail(message: string): void {
    if (this.violation !== null) return;
    const tail = this.recent.map((w) => `${w.owner}:${w.key}#${w.token}@${w.at.toFixed(1)}${w.honest ? '' : '(stale)'}${w.accepted ? '' : ' REFUSED'}`).join(', ');
    this.violation = `${message}; recent writes: ${tail}`;
  }
}
