// The resource limits the leader's admission (admission.ts) holds acquires and session opens to (SPEC
// "Limits"): node-local settings, read from the YAML's `limits` (config keys unchanged), never replicated.
// Apart from admission.ts so the leader's types (types.ts) can name them without importing admission.

export interface AdmissionLimits {
  /** Waiters (wait_ms > 0) in one key's line. */
  maxWaitersPerKey: number;
  /** Waiters in every line. */
  maxWaiters: number;
  /** Leases one owner holds (or is being granted) at a time. */
  maxHeldPerOwner: number;
  /** Leases held (or being granted) in all. */
  maxHeld: number;
  /** Key records the machine keeps: held keys and free keys with their last token. */
  maxKeys: number;
  /** Open sessions in all (session.ts). */
  maxSessions: number;
  /** Holds under one session (a hold that waits in line counts once granted, like any hold). */
  maxHoldsPerSession: number;
}

export const NO_ADMISSION_LIMITS: Readonly<AdmissionLimits> = Object.freeze({
  maxWaitersPerKey: Infinity,
  maxWaiters: Infinity,
  maxHeldPerOwner: Infinity,
  maxHeld: Infinity,
  maxKeys: Infinity,
  maxSessions: Infinity,
  maxHoldsPerSession: Infinity,
});

export function limitMessage(limit: keyof AdmissionLimits, value: number, what: string): string {
  return `limit limits.${limit} (${value}) reached: ${what}`;
}
