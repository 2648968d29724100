// A record value in text form: its bytes as the UTF-8 of the Latin-1 characters they are (a byte below 0x80
// is itself, one from 0x80 on is two bytes, 0xC2 or 0xC3 then 0x80-0xBF). The applied store keeps the values
// of a generation of meta format 2 in this form (applied-store.ts) for one reason: LevelDB hands a value it
// may read as UTF-8 as a string, which costs a fraction of the Buffer it hands otherwise — a restart reads a
// million records, and their Buffers (an ArrayBuffer and its backing store each, made and freed) were about
// half a second of its CPU and much of its GC (1.25M records of a 1M-lock store read whole: 1.1-1.4 s of CPU
// with a Buffer a value, 0.74-0.77 s with a string). Every character of such a string is below 0x100 and is the
// byte it stands for. Nothing leaves the node in this form: a snapshot stream and a backup carry the bytes.

/** `bytes` in text form (the same array when every byte is below 0x80). */
export function toTextForm(bytes: Uint8Array): Uint8Array {
  let high = 0;
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! >= 0x80) high++;
  if (high === 0) return bytes;
  const out = new Uint8Array(bytes.length + high);
  let at = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 0x80) out[at++] = b;
    else {
      out[at++] = 0xc0 | (b >> 6);
      out[at++] = 0x80 | (b & 0x3f);
    }
  }
  return out;
}

/** The bytes a text-form value stored as `stored` stands for (the same array when every byte is below 0x80);
 *  null when it is not text form (a corrupt record). */
export function fromTextForm(stored: Uint8Array): Uint8Array | null {
  let high = 0;
  for (let i = 0; i < stored.length; i++) if (stored[i]! >= 0x80) high++;
  if (high === 0) return stored;
  if (high % 2 !== 0) return null;
  const out = new Uint8Array(stored.length - high / 2);
  let at = 0;
  for (let i = 0; i < stored.length; i++) {
    const b = stored[i]!;
    if (b < 0x80) out[at++] = b;
    else {
      const next = stored[i + 1];
      if ((b !== 0xc2 && b !== 0xc3) || next === undefined || (next & 0xc0) !== 0x80) return null;
      out[at++] = ((b & 0x03) << 6) | (next & 0x3f);
      i++;
    }
  }
  return out;
}

/** A scratch array and its views by length, each made once: a restore reads a million values (and a quarter
 *  million remembered requests' keys) of a few lengths, and a view a record (~90 bytes) was a third of the
 *  garbage its key records made. A view is valid until the next use of its scratch. */
class Scratch {
  private bytes = new Uint8Array(256);
  private views: Uint8Array[] = [];

  /** The array, with room for `length` bytes (a new one, and new views, when it had none). */
  room(length: number): Uint8Array {
    if (this.bytes.length < length) {
      this.bytes = new Uint8Array(Math.max(length, this.bytes.length * 2));
      this.views = [];
    }
    return this.bytes;
  }

  /** Its first `length` bytes (at most what room() was last asked). */
  view(length: number): Uint8Array {
    return (this.views[length] ??= this.bytes.subarray(0, length));
  }
}

const valueScratch = new Scratch();
const keyScratch = new Scratch();

/**
 * The bytes a text-form value LevelDB handed as a string stands for, in a scratch array that the next call
 * overwrites: the caller reads it before it asks for another and keeps nothing of it (the lock machine's
 * restorer copies what it keeps). Null at a character above 0xFF: bytes that were not text form, which
 * LevelDB's lax decoding makes U+FFFD or a character of their own (a corrupt record).
 */
export function textToScratch(text: string): Uint8Array | null {
  const length = text.length;
  const out = valueScratch.room(length);
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c > 0xff) return null;
    out[i] = c;
  }
  return valueScratch.view(length);
}

/** The bytes of text[from..] when every character of it is ASCII (null when one is not), in a scratch array of
 *  its own that the next call overwrites, as textToScratch's: a restore reads the keys of a quarter-million
 *  remembered requests as text beside their values. */
export function asciiToScratch(text: string, from: number): Uint8Array | null {
  const length = text.length - from;
  const out = keyScratch.room(length);
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(from + i);
    if (c >= 0x80) return null;
    out[i] = c;
  }
  return keyScratch.view(length);
}
