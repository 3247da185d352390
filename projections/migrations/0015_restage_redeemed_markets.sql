-- Redemptions booked by what they paid (issue 36). The rollup refresh (rollups/refresh_trader_markets.sql)
-- now books a redemption against the side its payout per token names and closes a redeemed position
-- before its resolution is stored. Rows the earlier formula computed are recomputed: every (wallet,
-- market) with a redemption is staged under one batch that nothing marks done here, dated an hour back
-- (past the age at which a sweep takes a batch as left undone), so the refresher's sweep of batches left
-- undone refreshes it, the first one at start included. Each
-- recomputed row outranks the earlier formula's row of the same events (the formula's generation is
-- part of its version).
--
-- Idempotent: a repeated staging adds the same keys, which the refresher recomputes to the same rows
-- (or, once the batch is done, keys nothing reads; the staging table drops them within a day).

INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id, staged_at)
SELECT DISTINCT 'migration-0015-redeemed-markets', wallet, condition_id, now() - INTERVAL 1 HOUR
FROM {db:Identifier}.position_legs_v2
WHERE kind = 'REDEEM';
