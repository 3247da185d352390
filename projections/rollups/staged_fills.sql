-- Every copy of the fills of a refresh's staged pairs (each refresh statement keeps the highest source_rank of
-- each fill), in place of fills_v2 read by the staged pairs: the recent pairs (stage_refresh_pairs.sql) from
-- fills_recent, a range of each touched wallet's fills from {recent_from} on, so their cost follows what
-- changed and not the wallets' histories; the older pairs from fills_v2 by their keys. Parameters: refresh
-- String, recent_from UInt32.
FROM
(
    SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank
    FROM {db:Identifier}.fills_recent
    WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_refresh_pairs WHERE refresh = {refresh:String} AND recent)
      AND ts >= {recent_from:UInt32}
      AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_refresh_pairs WHERE refresh = {refresh:String} AND recent)
    UNION ALL
    SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank
    FROM {db:Identifier}.fills_v2
    WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_refresh_pairs WHERE refresh = {refresh:String} AND NOT recent)
      AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_refresh_pairs WHERE refresh = {refresh:String} AND NOT recent)
)
