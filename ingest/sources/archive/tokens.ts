/**
 * Token id → (market, token side): from the exchanges' TokenRegistered logs the archive reads, and from the
 * `market_tokens` projection, where `tokens` events of any source land (the upstream poller publishes them
 * from Gamma `clobTokenIds`). The archive's own registrations reach the projection too, so a restarted
 * archive finds the tokens of blocks before its checkpoint there.
 */
import { BACKGROUND_READ, type Store } from '../../../projections/store.ts';

export interface TokenMarket {
  conditionId: string;
  tokenSide: 1 | 2;
  negRisk: boolean;
}

export class TokenDirectory {
  /** Keyed by the token id as a number: a fill's id is looked up without printing it in decimal. */
  private readonly byToken = new Map<bigint, TokenMarket>();
  private readonly conditions = new Set<string>();
  /** Protocol V2 condition id → the legacy condition id of the market it was migrated from. */
  private readonly migrations = new Map<string, string>();

  get size(): number {
    return this.byToken.size;
  }

  lookup(tokenId: bigint | string): TokenMarket | undefined {
    return this.byToken.get(typeof tokenId === 'bigint' ? tokenId : BigInt(tokenId));
  }

  /** Whether some market's tokens are known for this condition. */
  knowsCondition(conditionId: string): boolean {
    return this.conditions.has(conditionId);
  }

  has(conditionId: string, token1: bigint | string, token2: bigint | string): boolean {
    const one = this.lookup(token1);
    const two = this.lookup(token2);
    return (
      one?.conditionId === conditionId && one.tokenSide === 1 && two?.conditionId === conditionId && two.tokenSide === 2
    );
  }

  add(conditionId: string, token1: bigint | string, token2: bigint | string, negRisk: boolean): void {
    this.byToken.set(BigInt(token1), { conditionId, tokenSide: 1, negRisk });
    this.byToken.set(BigInt(token2), { conditionId, tokenSide: 2, negRisk });
    this.conditions.add(conditionId);
  }

  /** The condition id a V2 condition's market is known by: its legacy one when migrated, else its own. */
  v2ConditionOf(v2ConditionId: string): string {
    return this.migrations.get(v2ConditionId) ?? v2ConditionId;
  }

  addMigration(v2ConditionId: string, legacyConditionId: string): void {
    this.migrations.set(v2ConditionId, legacyConditionId);
  }

  /** Loads every market's tokens from the projection (idempotent: a reload only adds or confirms). */
  async load(store: Store): Promise<number> {
    const migrations = await store.query<{ v2_condition_id: string; condition_id: string }>(
      'SELECT v2_condition_id, condition_id FROM {db:Identifier}.market_migrations FINAL',
      {},
      BACKGROUND_READ,
    );
    for (const row of migrations) this.addMigration(row.v2_condition_id, row.condition_id);
    const rows = await store.query<{ condition_id: string; token1_id: string; token2_id: string; neg_risk: number }>(
      'SELECT condition_id, token1_id, token2_id, neg_risk FROM {db:Identifier}.market_tokens FINAL',
      {},
      BACKGROUND_READ,
    );
    for (const row of rows) this.add(row.condition_id, row.token1_id, row.token2_id, row.neg_risk === 1);
    return rows.length;
  }
}
