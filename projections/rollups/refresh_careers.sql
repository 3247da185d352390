-- Recomputes careers_v2 for the wallets staged in rollup_keys under the given batches, from trader_markets_v2.
-- Parameters: batches Array(String), include_v1 UInt8 (card statistics cover the V2 era until a v1
-- backfill is declared done).
INSERT INTO {db:Identifier}.careers_v2
SELECT
    wallet,
    toUInt32(count()) AS markets_total,
    toUInt32(countIf(resolved)) AS resolved_total,
    toUInt32(countIf(resolved AND pnl_usd > 0)) AS wins,
    if(resolved_total = 0, NULL, wins / resolved_total) AS winrate,
    sum(buy_usd + sell_usd) AS volume_usd,
    min(first_ts) AS first_seen,
    max(last_ts) AS last_seen,
    sum(fills_count) AS fills_total,
    sum(buy_usd) AS buy_usd_total,
    sum(buy_tokens) AS buy_tokens_total,
    if(buy_tokens_total > 0, buy_usd_total / buy_tokens_total, NULL) AS avg_entry_price,
    if(wins = 0, NULL, avgIf(pnl_usd, resolved AND pnl_usd > 0)) AS avg_win_usd,
    if(countIf(resolved AND pnl_usd < 0) = 0, NULL, avgIf(pnl_usd, resolved AND pnl_usd < 0)) AS avg_loss_usd,
    sumIf(pnl_usd, resolved) AS career_pnl_usd,
    toUInt32(countIf(NOT resolved)) AS open_markets,
    sum(version) + count() AS career_version
FROM
(
    -- Each market's newest version (ReplacingMergeTree's rule, without FINAL).
    SELECT wallet, condition_id, resolved, pnl_usd, buy_usd, sell_usd, first_ts, last_ts, fills_count, buy_tokens, version, era
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
    ORDER BY version DESC
    LIMIT 1 BY wallet, condition_id
)
WHERE {include_v1:UInt8} = 1 OR era = 'v2'
GROUP BY wallet
