// Owners' names by their UTF-8 bytes, for a restore from the applied store (store-records.ts): a hold of no
// session carries its owner's name in its key record, and a million such holds have a few dozen owners (the
// held-scale bench's fill: 32). Decoding each (a view and a string a record, then a lookup by the new string
// to share the owner's one copy: machine-state.ts countOwner) cost ~0.1 s of a 300k-lock restart's CPU; here a
// name is decoded once per distinct owner and found again by a hash of its bytes.
import { decodeUtf8 } from './bytes.js';

interface KnownOwner {
  readonly hash: number;
  readonly bytes: Uint8Array;
  readonly name: string;
}

/** Owners remembered at most: a store of as many owners as holds gains nothing from remembering them, and
 *  the table stays small (the ones after the first this many are decoded each time, as before). */
export const OWNER_NAMES_KEPT = 4096;
/** Slots of the open-addressing table: a power of two, at most half full. */
const SLOTS = OWNER_NAMES_KEPT * 2;

/** FNV-1a over bytes[start, end). */
function hashOf(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash >>> 0;
}

function sameBytes(known: Uint8Array, bytes: Uint8Array, start: number, end: number): boolean {
  if (known.length !== end - start) return false;
  for (let i = 0; i < known.length; i++) if (known[i] !== bytes[start + i]) return false;
  return true;
}

export class OwnerNames {
  private readonly slots: (KnownOwner | undefined)[] = new Array<KnownOwner | undefined>(SLOTS);
  private count = 0;

  /** The name whose UTF-8 is bytes[start, end) (the same string for the same bytes while it is remembered);
   *  null when they are not valid UTF-8, exactly as decodeUtf8 says. */
  nameOf(bytes: Uint8Array, start: number, end: number): string | null {
    const hash = hashOf(bytes, start, end);
    const mask = SLOTS - 1;
    let at = hash & mask;
    for (let known = this.slots[at]; known !== undefined; known = this.slots[at]) {
      if (known.hash === hash && sameBytes(known.bytes, bytes, start, end)) return known.name;
      at = (at + 1) & mask;
    }
    const own = bytes.slice(start, end);
    const name = decodeUtf8(own);
    if (name !== null && this.count < OWNER_NAMES_KEPT) {
      this.slots[at] = { hash, bytes: own, name };
      this.count++;
    }
    return name;
  }
}
