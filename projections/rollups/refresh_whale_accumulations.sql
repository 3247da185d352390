-- Recomputes whale_accumulations_v2 for the (wallet, market) pairs staged in rollup_keys under the given
-- batches, both token sides, from the deduplicated fills: fills_v2 read by the staged pairs (a prefix of its
-- sort key), each fill's copy with the highest source_rank, so the cost follows the pairs, not the wallets.
-- Parameters: batches Array(String), burst_gap_s UInt32, exact_above_usd Float64.
INSERT INTO {db:Identifier}.whale_accumulations_v2
SELECT
    wallet,
    condition_id,
    token_side,
    greatest(burst_buy_usd, recent_buy_usd) >= {exact_above_usd:Float64} AS tracked,
    last_fill_at,
    last_price,
    burst_usd,
    burst_buy_usd,
    burst_started_at,
    burst_fills,
    arrayMap(x -> x.1, recent) AS recent_ts,
    arrayMap(x -> x.2, recent) AS recent_net_usd,
    arrayMap(x -> x.4, recent) AS recent_buy_tokens,
    arrayMap(x -> x.5, recent) AS recent_up_price,
    -- Every recomputation outranks the one before: a fill more, or a fill's copy replaced by one of a
    -- higher source rank (same count, higher rank sum); rows of the older formula (the count) are below.
    toUInt64(fill_count) * 16777216 + source_ranks AS version
FROM
(
    SELECT
        wallet,
        condition_id,
        token_side,
        -- (ts, net usd: + buy − sell, buy usd, buy tokens, up price, id), in time order
        arraySort(x -> (x.1, x.6), groupArray((ts, if(side = 'BUY', usd, -usd), if(side = 'BUY', usd, 0.), if(side = 'BUY', size_tokens, 0.), up_price, fill_id))) AS accumulation,
        arrayMap(x -> x.1, accumulation) AS fill_times,
        length(accumulation) AS fill_count,
        -- the burst starts at the first fill after the last pause of at least burst_gap_s
        arrayLastIndex((later, earlier) -> later - earlier >= {burst_gap_s:UInt32}, arrayPopFront(fill_times), arrayPopBack(fill_times)) + 1 AS burst_start,
        arraySlice(accumulation, burst_start) AS burst,
        arraySum(x -> x.2, burst) AS burst_usd,
        arraySum(x -> x.3, burst) AS burst_buy_usd,
        burst[1].1 AS burst_started_at,
        toUInt32(length(burst)) AS burst_fills,
        fill_times[fill_count] AS last_fill_at,
        accumulation[fill_count].5 AS last_price,
        arrayFilter(x -> x.1 + 86400 >= last_fill_at, accumulation) AS recent,
        arraySum(x -> x.3, recent) AS recent_buy_usd,
        sum(toUInt64(source_rank)) AS source_ranks
    FROM
    (
        SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, ts, source_rank
        FROM {db:Identifier}.fills_v2
        WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
          AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
        ORDER BY source_rank DESC
        LIMIT 1 BY wallet, condition_id, fill_id
    )
    GROUP BY wallet, condition_id, token_side
)
