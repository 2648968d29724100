// Who may make a lock call under auth.ownerBinding (SPEC "Owner binding"): the owner a call names must be
// its client certificate's CN, Revoke is for the CNs in auth.admins, and a call forwarded by a member node
// was checked there. Without owner binding everyone may.

/** What the checks read of a call (lock-calls.ts CallContext). */
export interface Caller {
  /** Forwarded by another node. */
  forwarded: boolean;
  /** The CN of the caller's client certificate, if it presented one. */
  certificateCn: string | undefined;
}

export interface CallAuthOptions {
  /** auth.ownerBinding: the owner of Acquire/Renew/Release must equal the caller's certificate CN. */
  ownerBinding?: boolean;
  /** auth.admins: the CNs that may Revoke under owner binding. */
  admins?: readonly string[];
  /** Whether `id` is a current member: a call forwarded by a member node was owner-checked there. */
  isMember?: (id: string) => boolean;
}

export class CallAuth {
  constructor(private readonly opts: CallAuthOptions) {}

  /**
   * A RenewSession / CloseSession / Revoke names no owner unless the caller sets one. Under auth.ownerBinding
   * the caller's certificate CN becomes the owner (written into the request, so a follower forwards it and
   * the state machine refuses another owner's session: WRONG_OWNER). True when it wrote the owner: the
   * request's bytes as the caller sent them no longer say what is to be done, and are not forwarded.
   */
  bindOwner(r: Record<string, unknown>, ctx: Caller): boolean {
    if (!this.opts.ownerBinding || ((r.owner as string | undefined) ?? '') !== '' || ctx.certificateCn === undefined) return false;
    r.owner = ctx.certificateCn;
    return true;
  }

  /** A call forwarded by a member node was checked there: the leader trusts it only from a member. */
  private trustedForward(ctx: Caller): boolean {
    return ctx.forwarded && ctx.certificateCn !== undefined && this.opts.isMember?.(ctx.certificateCn) === true;
  }

  /** Revoke under owner binding: only the CNs in auth.admins (a member forwarding one checked it). */
  adminDenied(ctx: Caller): string | null {
    if (!this.opts.ownerBinding) return null;
    const cn = ctx.certificateCn;
    if (this.trustedForward(ctx)) return null;
    if (cn === undefined)
      return 'Revoke under auth.ownerBinding needs a client certificate whose CN is in auth.admins, and this call has none';
    if (!(this.opts.admins ?? []).includes(cn))
      return `Revoke is for auth.admins; the client certificate CN ${JSON.stringify(cn)} is not one`;
    return null;
  }

  /** auth.ownerBinding: why this caller may not act as the request's owner, or null. */
  ownerDenied(ctx: Caller, request: unknown): string | null {
    if (!this.opts.ownerBinding) return null;
    const owner = (request as { owner?: unknown }).owner;
    if (typeof owner !== 'string') return null; // Get names no owner
    const cn = ctx.certificateCn;
    // A follower forwarding a client's call presents its own (member) certificate; it checked the client's
    // CN before forwarding, so the leader trusts a forwarded call only from a member node.
    if (this.trustedForward(ctx)) return null;
    if (cn === undefined) return `owner ${JSON.stringify(owner)}: auth.ownerBinding needs a client certificate, and this call has none`;
    if (cn !== owner)
      return `owner ${JSON.stringify(owner)} does not match the client certificate CN ${JSON.stringify(cn)} (auth.ownerBinding)`;
    return null;
  }
}
