// A fast 64-bit fingerprint of snapshot bytes, for comparing replicas (simulator invariant checks, tests).
// Two independent 32-bit FNV-1a lanes with different offset bases; Math.imul keeps it in 32-bit integer
// arithmetic (a BigInt per byte would be far too slow for a 100 MB snapshot). Not cryptographic: it
// detects divergence, it does not resist an adversary.

export function fingerprint64(bytes: Uint8Array): string {
  let low = 0x811c9dc5;
  let high = 0x050c5d1f;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    low = Math.imul(low ^ b, 0x01000193);
    high = Math.imul(high ^ b ^ (i & 0xff), 0x01000193) ^ (low >>> 15);
  }
  // Fold in the length so a truncated prefix with an unlucky hash still differs.
  high = Math.imul(high ^ bytes.length, 0x01000193);
  return (high >>> 0).toString(16).padStart(8, '0') + (low >>> 0).toString(16).padStart(8, '0');
}
