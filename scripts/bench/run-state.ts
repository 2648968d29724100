// Every cluster the run has started and not yet stopped, so SIGINT, SIGTERM and the --max-minutes watchdog
// can kill their processes by PID (and remove their temp dirs) before the benchmark exits.
import type { StartOptions, SystemCluster, SystemFactory } from './system.js';

const live = new Set<SystemCluster>();

export async function startTracked(factory: SystemFactory, opts: StartOptions): Promise<SystemCluster> {
  const c = await factory.start(opts);
  live.add(c);
  return c;
}

export async function stopTracked(c: SystemCluster): Promise<void> {
  live.delete(c);
  await c.stop();
}

/** Runs `body` on a fresh cluster of `factory`, stopped afterwards whatever happens. */
export async function withCluster<T>(factory: SystemFactory, opts: StartOptions, body: (c: SystemCluster) => Promise<T>): Promise<T> {
  const c = await startTracked(factory, opts);
  try {
    return await body(c);
  } finally {
    await stopTracked(c);
  }
}

export async function stopAll(): Promise<void> {
  await Promise.allSettled([...live].map((c) => stopTracked(c)));
}

/** A cluster started outside startTracked (held-scale starts its own) is still stopped on an interrupt. */
export function track(c: SystemCluster): () => void {
  live.add(c);
  return () => live.delete(c);
}
