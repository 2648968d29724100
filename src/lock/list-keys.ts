// A page of List (SPEC "List"): keys in UTF-8 byte order, the smallest `limit` of those offered, kept in a
// bounded max-heap so a page of a million keys costs one pass over them rather than a sort of them all.

/** Orders strings by their UTF-8 bytes (code point order), which UTF-16 `<` gets wrong for a surrogate
 *  pair against U+E000..U+FFFF. */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Only when both are in U+D800..U+FFFF does UTF-16 order differ from code point order.
    if (x >= 0xd800 && y >= 0xd800) return (x >= 0xe000 ? x - 0x800 : x + 0x2000) - (y >= 0xe000 ? y - 0x800 : y + 0x2000);
    return x - y;
  }
  return a.length - b.length;
}

/** The `limit` smallest keys offered (compareUtf8), as a bounded max-heap. */
export class SmallestKeys {
  private readonly heap: string[] = [];
  constructor(private readonly limit: number) {}

  offer(key: string): void {
    const h = this.heap;
    if (h.length < this.limit) {
      h.push(key);
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (compareUtf8(h[p]!, h[i]!) >= 0) break;
        [h[p], h[i]] = [h[i]!, h[p]!];
        i = p;
      }
    } else if (h.length > 0 && compareUtf8(key, h[0]!) < 0) {
      h[0] = key;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && compareUtf8(h[l]!, h[m]!) > 0) m = l;
        if (r < h.length && compareUtf8(h[r]!, h[m]!) > 0) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
  }

  sorted(): string[] {
    return [...this.heap].sort(compareUtf8);
  }
}
