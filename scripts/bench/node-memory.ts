// A member's memory as its own /metrics reports it (prom-client's process and nodejs defaults): what RSS is
// made of — the V8 heap (used, and reserved = total), memory outside it (array buffers, native buffers).
import type { LeaseholdCluster } from './leasehold-system.js';

export interface NodeMemory {
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  /** V8's old space, used (long-lived objects: the lock state). */
  oldSpaceUsedMb: number;
}

function metric(text: string, name: string, label = ''): number {
  const re = new RegExp(`^leasehold_${name}(?:\\{([^}]*)\\})? ([0-9.e+-]+)$`, 'gm');
  for (const m of text.matchAll(re)) if (label === '' || (m[1] ?? '').includes(label)) return Number(m[2]);
  return NaN;
}

const MB = 1048576;

export async function memoryOf(c: LeaseholdCluster, member: number): Promise<NodeMemory> {
  const text = await c.metricsText(member).catch(() => '');
  return {
    heapUsedMb: metric(text, 'nodejs_heap_size_used_bytes') / MB,
    heapTotalMb: metric(text, 'nodejs_heap_size_total_bytes') / MB,
    externalMb: metric(text, 'nodejs_external_memory_bytes') / MB,
    oldSpaceUsedMb: metric(text, 'nodejs_heap_space_size_used_bytes', 'space="old"') / MB,
  };
}

export function describeMemory(m: NodeMemory): string {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '?');
  return `heap ${f(m.heapUsedMb)}/${f(m.heapTotalMb)} MB (used/total; old space ${f(m.oldSpaceUsedMb)}), external ${f(m.externalMb)} MB`;
}
