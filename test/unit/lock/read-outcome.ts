// For differential tests of two readers over the same bytes (e.g. a reader and its allocation-free
// checker): what one read does, as a comparable string.
import { ByteReader } from '../../../src/lock/bytes.js';

/** The error message, or the offset the read stopped at. */
export function readOutcome(bytes: Uint8Array, read: (r: ByteReader) => unknown): string {
  const reader = new ByteReader(bytes, (m) => new Error(m));
  try {
    read(reader);
    return `ok at ${reader.position}`;
  } catch (error) {
    return (error as Error).message;
  }
}
