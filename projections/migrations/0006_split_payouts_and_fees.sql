-- The archive's real markets: fees and split-payout resolutions in the per-trader rollup.
--
-- fee_usd: the fees the trader's fills paid in this market (pnl and cash flow are net of them; volume and
-- the fills' usd are notional).
-- up_payout: what one token 1 paid at the resolution (1 when token 1 won, 0 when token 2 won, 0.5 for a
-- 50/50 split payout); NULL while the market is open. Token 2 paid 1 − up_payout.
--
-- Additive only: rows written before this read fee_usd 0 and up_payout NULL until their next recomputation
-- (the rollup refresh writes both).

ALTER TABLE {db:Identifier}.trader_markets ADD COLUMN IF NOT EXISTS fee_usd Float64 DEFAULT 0;
ALTER TABLE {db:Identifier}.trader_markets ADD COLUMN IF NOT EXISTS up_payout Nullable(Float64);

-- The archive's durable checkpoint: per source (one archive deployment), the last block whose events are
-- all durably on the log, with its hash (a reorg deeper than the confirmations shows as a different hash).
CREATE TABLE IF NOT EXISTS {db:Identifier}.archive_checkpoints
(
    source     String,
    block      UInt64,
    block_hash String,
    updated_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(block)
ORDER BY source;
