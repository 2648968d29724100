// The chain of causes behind an error, for code that asks what lies under a wrapper (a gRPC status under
// a client error, a LevelDB code under "Database failed to open").

/** How deep a chain is followed: deeper than any wrapping this code does, and a cycle of causes ends. */
const MAX_CAUSE_DEPTH = 5;

/** `err`, its `cause`, that one's `cause` and so on while each is an Error, at most MAX_CAUSE_DEPTH. */
export function causeChain(err: unknown): Error[] {
  const chain: Error[] = [];
  for (let e: unknown = err; e instanceof Error && chain.length < MAX_CAUSE_DEPTH; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}
