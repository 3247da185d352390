/**
 * The plane's ledger of provisional events (docs/live.md, "Provisional events"): which subscriptions were
 * sent which event of a block above the chain's final one, so that each of them ends `final` or
 * `retracted` for them exactly once, and the final copy that comes later on the final topics is not sent
 * a second time.
 *
 * - A provisional event (ref R, identity K: the final copy's event id, tx and amounts, not the log's place)
 *   is sent to a subscription unless that subscription already has K (its final copy came first), unless
 *   R was seen (the archive republishes a block after a restart), and unless its block was already marked.
 * - A mark of (block, hash) resolves every open event of that block: each subscription it was sent to gets
 *   `final` or `retracted` naming R.
 * - A final copy of K for a subscription that holds an open R of K resolves R as final for it at once
 *   (whichever of the mark and the copy comes first); one it already has is not sent again.
 *
 * Memory is bounded: open events are those of the blocks above the final one; the rest are LRU caches.
 */
import { LRUCache } from 'lru-cache';
import type { MarkState, ProvisionalTag } from '../../live-input.ts';
import { blockKeyOf, refBlockOf } from './resume.ts';

interface OpenEvent<S> {
  key: string;
  market: string;
  /** The subscriptions it was sent to, still waiting for its end. */
  sentTo: Set<S>;
}

const blockKey = (block: number, hash: string) => `${block}:${hash}`;

/** How many resolved blocks, seen refs and delivered identities are remembered. */
const MARKS_KEPT = 10_000;
const REFS_KEPT = 200_000;
const KEYS_KEPT = 200_000;

export class ProvisionalLedger<S extends object> {
  readonly #open = new Map<string, OpenEvent<S>>();
  readonly #byBlock = new Map<string, Set<string>>();
  readonly #byKey = new Map<string, Set<string>>();
  readonly #marks = new LRUCache<string, MarkState>({ max: MARKS_KEPT });
  /** The same marks by the block's name in a ref (a resumed ref is answered from them). */
  readonly #marksOfRefs = new LRUCache<string, MarkState>({ max: MARKS_KEPT });
  readonly #seen = new LRUCache<string, true>({ max: REFS_KEPT });
  /** The identities each subscription holds as a final event (sent final, or its provisional one resolved final). */
  readonly #delivered = new LRUCache<string, WeakSet<S>>({ max: KEYS_KEPT });

  /** Events sent provisionally and not resolved yet. */
  get open(): number {
    return this.#open.size;
  }

  /**
   * A provisional event arrives: `drop` (a duplicate, or its block was retracted), `final` (its block is
   * final already: send it as a final event), or `provisional`.
   */
  admit(tag: ProvisionalTag): 'drop' | 'final' | 'provisional' {
    if (this.#seen.has(tag.ref)) return 'drop';
    this.#seen.set(tag.ref, true);
    const marked = this.#marks.get(blockKey(tag.block, tag.hash));
    if (marked === 'retracted') return 'drop';
    return marked === 'final' ? 'final' : 'provisional';
  }

  /** How the block of a ref ended, as far as this plane saw its mark (undefined: not seen). */
  endOf(ref: string): MarkState | undefined {
    const named = refBlockOf(ref);
    return named === null ? undefined : this.#marksOfRefs.get(named.key);
  }

  /** Whether the subscription already holds this identity as a final event. */
  holds(key: string, subscription: S): boolean {
    return this.#delivered.get(key)?.has(subscription) ?? false;
  }

  /** The subscription was sent identity `key` as a final event. */
  deliveredFinal(key: string, subscription: S): void {
    let holders = this.#delivered.get(key);
    if (!holders) this.#delivered.set(key, (holders = new WeakSet()));
    holders.add(subscription);
  }

  /** The subscription was sent the provisional event `tag.ref` (identity `key`, of `market`). */
  sentProvisional(tag: ProvisionalTag, key: string, market: string, subscription: S): void {
    let open = this.#open.get(tag.ref);
    if (!open) {
      open = { key, market, sentTo: new Set() };
      this.#open.set(tag.ref, open);
      addTo(this.#byBlock, blockKey(tag.block, tag.hash), tag.ref);
      addTo(this.#byKey, key, tag.ref);
    }
    open.sentTo.add(subscription);
  }

  /**
   * A final copy of identity `key` for a subscription: `skip` (it holds it), `resolve` (it holds the open
   * provisional `ref`: send `final` for it), or `send`.
   */
  finalCopy(key: string, subscription: S): { kind: 'skip' } | { kind: 'resolve'; ref: string } | { kind: 'send' } {
    if (this.holds(key, subscription)) return { kind: 'skip' };
    this.deliveredFinal(key, subscription);
    for (const ref of this.#byKey.get(key) ?? []) {
      const open = this.#open.get(ref);
      if (open?.sentTo.delete(subscription)) return { kind: 'resolve', ref };
    }
    return { kind: 'send' };
  }

  /** A block ended: the subscriptions to tell, with the ref and market of each event they were sent. */
  mark(block: number, hash: string, state: MarkState): Array<{ subscription: S; ref: string; market: string }> {
    const key = blockKey(block, hash);
    this.#marks.set(key, state);
    this.#marksOfRefs.set(blockKeyOf(block, hash), state);
    const refs = this.#byBlock.get(key);
    this.#byBlock.delete(key);
    const told: Array<{ subscription: S; ref: string; market: string }> = [];
    for (const ref of refs ?? []) {
      const open = this.#open.get(ref)!;
      this.#open.delete(ref);
      removeFrom(this.#byKey, open.key, ref);
      for (const subscription of open.sentTo) {
        told.push({ subscription, ref, market: open.market });
        if (state === 'final') this.deliveredFinal(open.key, subscription);
      }
    }
    return told;
  }
}

function addTo(index: Map<string, Set<string>>, key: string, value: string): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(value);
}

function removeFrom(index: Map<string, Set<string>>, key: string, value: string): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}
