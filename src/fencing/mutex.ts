// One-at-a-time sections per resource id, within one process: what makes a read-compare-write on a store
// without conditional writes (LevelDB) atomic with respect to other writers of the same store object.
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, section: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(section, section);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      // Forget idle keys so the map does not grow with every id ever written.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
