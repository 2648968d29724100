// Protobuf bytes written by hand in tests, for encodings no library writes (over-long varints, fields out of
// order, unknown fields): the unit tests of the strict request decoder and of the Raft stream's codec.

/** The varint of `v` (minimal length). */
export function varint(v: bigint): number[] {
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}

/** A field's tag: field number * 8 + wire type. */
export const tag = (field: number, wire: number): number[] => varint(BigInt(field * 8 + wire));
