/**
 * Resuming provisional events (docs/live.md, "Resuming"): a client whose connection closed (its plane
 * restarted, or the network dropped) with provisional events it was sent and not told the end of, sends
 * their refs on its next connection. The plane answers each once, `final` or `retracted`: from the marks it
 * saw itself, else from the store's head blocks (what the archive wrote as each block ended), else when the
 * block's mark reaches it. A ref names its block: `<block>:<16 hex of the block's hash>:<index>`.
 */

/** A ref's block, as the marks and the store name it: `<block>:<16 hex of the hash>`. */
export type RefBlock = string;

export const REF_PATTERN = /^(\d{1,15}):([0-9a-f]{16}):(\d{1,9})$/;

/** A ref's block number and its block's key; null when it is not a ref of the head stage. */
export function refBlockOf(ref: string): { block: number; key: RefBlock } | null {
  const match = REF_PATTERN.exec(ref);
  if (!match) return null;
  return { block: Number(match[1]), key: `${match[1]}:${match[2]}` };
}

/** The key of a block a mark or the store names by its full hash. */
export function blockKeyOf(block: number, hash: string): RefBlock {
  return `${block}:${hash.slice(2, 18)}`;
}

/** Refs a connection resumed and whose block has not ended yet, until its mark comes or the connection goes. */
export class ResumeBook<C> {
  readonly #waiting = new Map<RefBlock, Map<C, Set<string>>>();
  readonly #count = new Map<C, number>();

  /** Refs the connection waits on now. */
  waiting(connection: C): number {
    return this.#count.get(connection) ?? 0;
  }

  wait(connection: C, key: RefBlock, ref: string): void {
    let byConnection = this.#waiting.get(key);
    if (!byConnection) this.#waiting.set(key, (byConnection = new Map()));
    let refs = byConnection.get(connection);
    if (!refs) byConnection.set(connection, (refs = new Set()));
    if (refs.has(ref)) return;
    refs.add(ref);
    this.#count.set(connection, this.waiting(connection) + 1);
  }

  /** A block ended: every connection waiting on one of its refs, with the refs (each told once). */
  end(key: RefBlock): Array<{ connection: C; ref: string }> {
    const byConnection = this.#waiting.get(key);
    if (!byConnection) return [];
    this.#waiting.delete(key);
    const told: Array<{ connection: C; ref: string }> = [];
    for (const [connection, refs] of byConnection) {
      this.#uncount(connection, refs.size);
      for (const ref of refs) told.push({ connection, ref });
    }
    return told;
  }

  /** The connection is gone: it waits on nothing. */
  drop(connection: C): void {
    if (!this.#count.has(connection)) return;
    for (const [key, byConnection] of this.#waiting) {
      byConnection.delete(connection);
      if (byConnection.size === 0) this.#waiting.delete(key);
    }
    this.#count.delete(connection);
  }

  #uncount(connection: C, refs: number): void {
    const left = this.waiting(connection) - refs;
    if (left > 0) this.#count.set(connection, left);
    else this.#count.delete(connection);
  }
}
