-- Recomputes trader_markets_v2 for the (wallet, market) pairs staged in rollup_keys under the given batches, from the
-- deduplicated fills and legs. The cost follows what changed: the fills and legs are read from fills_v2 and
-- position_legs_v2 (index granularity 256) by the staged pairs, a prefix of their sort keys, so only those pairs'
-- granules are read, however long the wallets' histories; each fill's copy with the highest source_rank is kept
-- (ReplacingMergeTree's rule, without FINAL over the wallets' ranges).
--
-- Fees: cash flow and pnl are net of the fees the fills paid (fee_usd); volumes and the fills' usd are notional.
-- Resolutions: a winner (token 1 or 2) pays 1.00 per winning token; a split payout (numerators [1, 1]: no
-- winner) pays each token its share, up_payout = payout1 / (payout1 + payout2) per token 1 and the rest per
-- token 2. A resolved market's pnl is its cash flow plus the unredeemed tokens at what they pay.
INSERT INTO {db:Identifier}.trader_markets_v2
SELECT
    m.wallet AS wallet,
    m.condition_id AS condition_id,
    m.fills_count, m.buy_count, m.sell_count, m.buy_usd, m.sell_usd, m.buy_tokens, m.buy_up_price_tokens,
    m.side1_buy_count, m.side1_sell_count, m.side1_buy_usd, m.side1_sell_usd, m.side1_buy_tokens, m.side1_sell_tokens,
    m.side2_buy_count, m.side2_sell_count, m.side2_buy_usd, m.side2_sell_usd, m.side2_buy_tokens, m.side2_sell_tokens,
    m.legs_count, m.split_usd, m.split_tokens, m.merge_usd, m.merge_tokens, m.redeem_usd, m.redeem_tokens,
    m.first_fill_ts, m.last_fill_ts, m.first_ts, m.last_ts,
    m.last_action, m.last_price, m.last_token_side,
    -- Redemptions: no source names the side redeemed; the payout per token says it (the contract admits 0, 0.5
    -- and 1 only; see the redeem_* columns of m). With a winner, each winning token paid 1.00 and a losing one
    -- nothing: the USD is the winning tokens burned, the rest of the tokens the losing ones (the chain's copy
    -- states tokens = USD: winners). A split payout's redemption burns both sides and the chain reports only
    -- the USD: the share of the holdings redeemed is that USD over their value (exact when a holder redeems
    -- everything, as redeemPositions does). No resolution stored yet: a redemption proves the market
    -- resolved; the winner is the side that could have paid it (m.redeemed_winner), and without one that
    -- can be told the position is closed (redeemPositions burns the holder's whole balance of both outcomes).
    multiIf(r.winner_token_side = 1, m.held1 - m.redeem_usd,
            r.winner_token_side = 2, m.held1 - greatest(m.redeem_tokens - m.redeem_usd, 0.),
            r.up_level IS NOT NULL,
            m.held1 * (1 - (if(r.up_level IS NOT NULL AND m.held1 * r.up_level + m.held2 * (1 - r.up_level) > 0,
                               least(1., m.redeem_usd / (m.held1 * r.up_level + m.held2 * (1 - r.up_level))), 0.) AS split_redeemed_share)),
            m.redeem_count = 0, m.held1,
            m.redeemed_winner = 1, m.held1 - m.redeem_won_tokens - m.redeem_split_tokens / 2,
            m.redeemed_winner = 2, m.held1 - m.redeem_lost_tokens - m.redeem_split_tokens / 2,
            m.redeem_split_tokens > 0 AND m.held1 + m.held2 > 0,
            m.held1 * (1 - (least(1., m.redeem_split_tokens / (m.held1 + m.held2)) AS unresolved_split_share)),
            0.) AS net_tokens1,
    multiIf(r.winner_token_side = 2, m.held2 - m.redeem_usd,
            r.winner_token_side = 1, m.held2 - greatest(m.redeem_tokens - m.redeem_usd, 0.),
            r.up_level IS NOT NULL, m.held2 * (1 - split_redeemed_share),
            m.redeem_count = 0, m.held2,
            m.redeemed_winner = 2, m.held2 - m.redeem_won_tokens - m.redeem_split_tokens / 2,
            m.redeemed_winner = 1, m.held2 - m.redeem_lost_tokens - m.redeem_split_tokens / 2,
            m.redeem_split_tokens > 0 AND m.held1 + m.held2 > 0, m.held2 * (1 - unresolved_split_share),
            0.) AS net_tokens2,
    m.sell_usd + m.merge_usd + m.redeem_usd + m.convert_usd - m.buy_usd - m.split_usd - m.fee_usd AS cash_flow_usd,
    r.up_level IS NOT NULL AS resolved,
    r.winner_token_side AS winner_token_side,
    if(resolved, cash_flow_usd + net_tokens1 * assumeNotNull(r.up_level) + net_tokens2 * (1 - assumeNotNull(r.up_level)),
       cash_flow_usd) AS pnl_usd,
    m.market_era AS era,
    -- Every recomputation outranks the one before: a fill or leg more, the resolution, a stated resolution
    -- superseding an inferred one (the bit of 2^55: no row goes back from stated to inferred), or a fill's
    -- copy replaced by one of a higher source rank (the archive's for the upstream's: same count, higher rank
    -- sum). Ranks sum below 2^24 for any realistic market; rows of the older formula (count × 2 + resolved)
    -- are all below the new ones. The last term is the formula's generation (redemptions by their payout):
    -- a row it recomputes outranks the earlier formula's row of the same events.
    ((toUInt64(m.fills_count) + m.legs_count) * 2 + toUInt8(resolved)) * 16777216 + m.source_ranks
        + toUInt64(resolved AND r.inferred = 0) * 36028797018963968
        + 72057594037927936 AS version,
    m.fee_usd AS fee_usd,
    r.up_level AS up_payout,
    -- who said it resolved (migration 0026); a stated resolution that named no source reads 'stated'
    if(resolved, if(r.source = '', 'stated', r.source), '') AS resolution_source
FROM
(
    SELECT
        wallet,
        condition_id,
        toUInt32(countIf(kind = 'FILL')) AS fills_count,
        toUInt32(countIf(kind = 'FILL' AND side = 'BUY')) AS buy_count,
        toUInt32(countIf(kind = 'FILL' AND side = 'SELL')) AS sell_count,
        sumIf(usd, kind = 'FILL' AND side = 'BUY') AS buy_usd,
        sumIf(usd, kind = 'FILL' AND side = 'SELL') AS sell_usd,
        sumIf(tokens, kind = 'FILL' AND side = 'BUY') AS buy_tokens,
        sumIf(up_price * tokens, kind = 'FILL' AND side = 'BUY') AS buy_up_price_tokens,
        toUInt32(countIf(kind = 'FILL' AND side = 'BUY' AND token_side = 1)) AS side1_buy_count,
        toUInt32(countIf(kind = 'FILL' AND side = 'SELL' AND token_side = 1)) AS side1_sell_count,
        sumIf(usd, kind = 'FILL' AND side = 'BUY' AND token_side = 1) AS side1_buy_usd,
        sumIf(usd, kind = 'FILL' AND side = 'SELL' AND token_side = 1) AS side1_sell_usd,
        sumIf(tokens, kind = 'FILL' AND side = 'BUY' AND token_side = 1) AS side1_buy_tokens,
        sumIf(tokens, kind = 'FILL' AND side = 'SELL' AND token_side = 1) AS side1_sell_tokens,
        toUInt32(countIf(kind = 'FILL' AND side = 'BUY' AND token_side = 2)) AS side2_buy_count,
        toUInt32(countIf(kind = 'FILL' AND side = 'SELL' AND token_side = 2)) AS side2_sell_count,
        sumIf(usd, kind = 'FILL' AND side = 'BUY' AND token_side = 2) AS side2_buy_usd,
        sumIf(usd, kind = 'FILL' AND side = 'SELL' AND token_side = 2) AS side2_sell_usd,
        sumIf(tokens, kind = 'FILL' AND side = 'BUY' AND token_side = 2) AS side2_buy_tokens,
        sumIf(tokens, kind = 'FILL' AND side = 'SELL' AND token_side = 2) AS side2_sell_tokens,
        toUInt32(countIf(kind != 'FILL')) AS legs_count,
        sum(source_rank) AS source_ranks,
        sumIf(usd, kind = 'SPLIT') AS split_usd,
        sumIf(tokens, kind = 'SPLIT') AS split_tokens,
        sumIf(usd, kind = 'MERGE') AS merge_usd,
        sumIf(tokens, kind = 'MERGE') AS merge_tokens,
        sumIf(usd, kind = 'REDEEM') AS redeem_usd,
        sumIf(tokens, kind = 'REDEEM') AS redeem_tokens,
        countIf(kind = 'REDEEM') AS redeem_count,
        -- each redemption by its payout per token (validated on ingest to be 0, 0.5 or 1: the nearest says which)
        sumIf(tokens, kind = 'REDEEM' AND usd * 4 > tokens * 3) AS redeem_won_tokens,
        sumIf(tokens, kind = 'REDEEM' AND usd * 4 < tokens) AS redeem_lost_tokens,
        redeem_tokens - redeem_won_tokens - redeem_lost_tokens AS redeem_split_tokens,
        sumIf(fee_usd, kind = 'FILL') AS fee_usd,
        -- a neg-risk conversion: NO tokens (token 2) out for a share of its USDC, YES tokens (token 1) in; a
        -- horizontal split (merge): YES tokens in (out) for the condition's share of the collateral
        sumIf(tokens, kind IN ('CONVERT_IN', 'HORIZONTAL_SPLIT')) - sumIf(tokens, kind = 'HORIZONTAL_MERGE') AS convert_in_tokens,
        sumIf(tokens, kind = 'CONVERT_OUT') AS convert_out_tokens,
        sumIf(usd, kind IN ('CONVERT_OUT', 'HORIZONTAL_MERGE')) - sumIf(usd, kind IN ('CONVERT_IN', 'HORIZONTAL_SPLIT')) AS convert_usd,
        side1_buy_tokens - side1_sell_tokens + split_tokens - merge_tokens + convert_in_tokens AS held1,
        side2_buy_tokens - side2_sell_tokens + split_tokens - merge_tokens - convert_out_tokens AS held2,
        -- Before a resolution is stored, the winner a wallet's redemptions imply: the one side that held enough
        -- to pay the winning ones, else the other of the one side that held enough for the losing ones (a
        -- micro-token of rounding allowed); 0 when no side can be told.
        multiIf(redeem_won_tokens > 0 AND held1 + 0.000001 >= redeem_won_tokens AND held2 + 0.000001 < redeem_won_tokens, 1,
                redeem_won_tokens > 0 AND held2 + 0.000001 >= redeem_won_tokens AND held1 + 0.000001 < redeem_won_tokens, 2,
                redeem_lost_tokens > 0 AND held1 + 0.000001 >= redeem_lost_tokens AND held2 + 0.000001 < redeem_lost_tokens, 2,
                redeem_lost_tokens > 0 AND held2 + 0.000001 >= redeem_lost_tokens AND held1 + 0.000001 < redeem_lost_tokens, 1,
                0) AS redeemed_winner,
        if(fills_count = 0, NULL, minIf(ts, kind = 'FILL')) AS first_fill_ts,
        if(fills_count = 0, NULL, maxIf(ts, kind = 'FILL')) AS last_fill_ts,
        min(ts) AS first_ts,
        max(ts) AS last_ts,
        argMaxIf(side, (ts, id), kind = 'FILL') AS last_action,
        if(fills_count = 0, NULL, argMaxIf(up_price, (ts, id), kind = 'FILL')) AS last_price,
        argMaxIf(token_side, (ts, id), kind = 'FILL') AS last_token_side,
        if(countIf(era = 'v2') > 0, 'v2', 'v1') AS market_era
    FROM
    (
        SELECT wallet, condition_id, 'FILL' AS kind, side, token_side, up_price, size_tokens AS tokens, usd, fee_usd, ts,
               fill_id AS id, era, toUInt64(source_rank) AS source_rank
        FROM
        (
            SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, ts, era, source_rank
            FROM {db:Identifier}.fills_v2
            WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
              AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
            ORDER BY source_rank DESC
            LIMIT 1 BY wallet, condition_id, fill_id
        )
        UNION ALL
        SELECT wallet, condition_id, kind, '' AS side, toUInt8(0) AS token_side, toFloat64(0) AS up_price, tokens, usd,
               toFloat64(0) AS fee_usd, ts, leg_id AS id, era, toUInt64(0) AS source_rank
        FROM
        (
            -- One row per leg (a repeated leg is the same event: any copy).
            SELECT wallet, condition_id, leg_id, kind, tokens, usd, ts, era
            FROM {db:Identifier}.position_legs_v2
            WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
              AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
            LIMIT 1 BY wallet, condition_id, leg_id
        )
    )
    GROUP BY wallet, condition_id
) AS m
LEFT JOIN
(
    SELECT condition_id, winner_token_side, inferred, source,
           -- what one token 1 pays: 1 or 0 with a winner, its numerator's share in a split payout; NULL: not resolved
           multiIf(winner_token_side = 1, 1., winner_token_side = 2, 0.,
                   coalesce(payout1, 0) + coalesce(payout2, 0) > 0, coalesce(payout1, 0) / (coalesce(payout1, 0) + coalesce(payout2, 0)),
                   NULL) AS up_level
    FROM
    (
        -- Each market's resolution: a stated one before an inferred one, then the latest (migration 0026), without FINAL.
        SELECT condition_id, winner_token_side, payout1, payout2, inferred, source
        FROM {db:Identifier}.market_resolutions_v2
        WHERE condition_id IN (SELECT condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
        ORDER BY inferred, ts DESC
        LIMIT 1 BY condition_id
    )
) AS r ON r.condition_id = m.condition_id
