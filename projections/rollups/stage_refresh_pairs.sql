-- Which of a refresh's staged (wallet, market) pairs are recent: every event of the pair at or after
-- {recent_from} (the earliest of its staged copies and of what its rows already hold), so that its fills can
-- be read from fills_recent by time (staged_fills.sql). A pair without a row yet is as recent as its staged
-- copies; a key staged without a time (0) is old. Parameters: batches Array(String), refresh String,
-- recent_from UInt32.
INSERT INTO {db:Identifier}.rollup_refresh_pairs (refresh, wallet, condition_id, recent, recent_from)
SELECT
    {refresh:String},
    k.wallet,
    k.condition_id,
    if(t.known, least(k.staged_from, t.first_ts), k.staged_from) >= {recent_from:UInt32},
    {recent_from:UInt32}
FROM
(
    SELECT wallet, condition_id, min(from_ts) AS staged_from
    FROM {db:Identifier}.rollup_keys
    WHERE batch IN {batches:Array(String)}
    GROUP BY wallet, condition_id
) AS k
LEFT JOIN
(
    -- The earliest first event over every version of the pair's row: never later than what its newest holds.
    SELECT wallet, condition_id, min(first_ts) AS first_ts, true AS known
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
      AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
    GROUP BY wallet, condition_id
) AS t ON t.wallet = k.wallet AND t.condition_id = k.condition_id
SETTINGS join_use_nulls = 0
