/**
 * Token id → (market, token side): from the exchanges' TokenRegistered logs the archive reads, and from the
 * `market_tokens` projection, where `tokens` events of any source land (the upstream poller publishes them
 * from Gamma `clobTokenIds`). The archive's own registrations reach the projection too, so a restarted
 * archive finds the tokens of blocks before its checkpoint there.
 */
import type { Store } from '../../../projections/store.ts';

export interface TokenMarket {
  conditionId: string;
  tokenSide: 1 | 2;
  negRisk: boolean;
}

export class TokenDirectory {
  private readonly byToken = new Map<string, TokenMarket>();
  private readonly conditions = new Set<string>();

  get size(): number {
    return this.byToken.size;
  }

  lookup(tokenId: string): TokenMarket | undefined {
    return this.byToken.get(tokenId);
  }

  /** Whether some market's tokens are known for this condition. */
  knowsCondition(conditionId: string): boolean {
    return this.conditions.has(conditionId);
  }

  has(conditionId: string, token1: string, token2: string): boolean {
    const one = this.byToken.get(token1);
    const two = this.byToken.get(token2);
    return one?.conditionId === conditionId && one.tokenSide === 1 && two?.conditionId === conditionId && two.tokenSide === 2;
  }

  add(conditionId: string, token1: string, token2: string, negRisk: boolean): void {
    this.byToken.set(token1, { conditionId, tokenSide: 1, negRisk });
    this.byToken.set(token2, { conditionId, tokenSide: 2, negRisk });
    this.conditions.add(conditionId);
  }

  /** Loads every market's tokens from the projection (idempotent: a reload only adds or confirms). */
  async load(store: Store): Promise<number> {
    const rows = await store.query<{ condition_id: string; token1_id: string; token2_id: string; neg_risk: number }>(
      'SELECT condition_id, token1_id, token2_id, neg_risk FROM {db:Identifier}.market_tokens FINAL',
      {},
    );
    for (const row of rows) this.add(row.condition_id, row.token1_id, row.token2_id, row.neg_risk === 1);
    return rows.length;
  }
}
