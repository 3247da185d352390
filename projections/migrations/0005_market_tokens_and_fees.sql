-- Real sources: the outcome token ids of each market (the archive maps an on-chain fill's token id to a
-- market and side with them), the fee a fill paid, and split-payout resolutions.
--
-- Additive only: existing rows read fee_usd 0 and payouts NULL (unknown), which is what they were.

CREATE TABLE IF NOT EXISTS {db:Identifier}.market_tokens
(
    condition_id String,
    token1_id    String,
    token2_id    String,
    neg_risk     UInt8
)
ENGINE = ReplacingMergeTree
ORDER BY condition_id
SETTINGS non_replicated_deduplication_window = 1000;

ALTER TABLE {db:Identifier}.fills ADD COLUMN IF NOT EXISTS fee_usd Float64 DEFAULT 0 AFTER usd;

-- winner_token_side 0 = no single winner (payouts [1, 1]); the numerators as reported, when known.
ALTER TABLE {db:Identifier}.market_resolutions ADD COLUMN IF NOT EXISTS payout1 Nullable(UInt64) AFTER winner_token_side;
ALTER TABLE {db:Identifier}.market_resolutions ADD COLUMN IF NOT EXISTS payout2 Nullable(UInt64) AFTER payout1;
