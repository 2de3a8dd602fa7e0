// One-at-a-time work per key inside one process: an append's size check and its write must not
// interleave with another append or write to the same blob.

export class KeyedLock {
  #tails = new Map<string, Promise<unknown>>();

  /** Runs `work` once every earlier call for `key` has settled; resolves or rejects as it does. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key) ?? Promise.resolve();
    const result = before.then(work, work);
    const settled = result.then(
      () => {},
      () => {},
    );
    this.#tails.set(key, settled);
    try {
      return await result;
    } finally {
      if (this.#tails.get(key) === settled) this.#tails.delete(key);
    }
  }
}
