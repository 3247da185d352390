-- A wallet's markets as one column (issue 17). The card, top-markets, the markets list and a summary all
-- start from the newest trader_markets_v2 row of each market of the wallet (projections/wallet-markets.ts),
-- 30 of its columns. On the embedded engine a point read pays for every column it reads in every part it
-- touches, whatever the rows, and this one long column costs a fraction of the 30 (figures in
-- test/bench/RESULTS.md). So the row is serialized once,
-- when it is written: `wallet_row` is a MATERIALIZED column, computed by every insert (the rollup
-- refresher's included) from the row's own columns, exactly as a JSONEachRow read of those columns returns
-- them (same names, same number formatting, null for a missing payout). Readers parse it; the fields
-- are WalletMarketRow's (wallet-markets.ts, WALLET_MARKET_FIELDS, checked against this list by
-- test/reads-shape.integration.test.ts).
--
-- Additive: rows written before this read their wallet_row computed on the fly until MATERIALIZE COLUMN
-- (a mutation, in the background) has rewritten their parts. Idempotent: the column is added once; a
-- repeated MATERIALIZE rewrites the same values.

ALTER TABLE {db:Identifier}.trader_markets_v2 ADD COLUMN IF NOT EXISTS wallet_row String MATERIALIZED formatRowNoNewline('JSONEachRow',
    condition_id, resolved, winner_token_side, up_payout, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count,
    first_ts, last_ts, last_action, last_price, net_tokens1, net_tokens2, cash_flow_usd, era,
    buy_count, sell_count, buy_up_price_tokens,
    side1_buy_count, side1_sell_count, side1_buy_usd, side1_sell_usd, side1_buy_tokens,
    side2_buy_count, side2_sell_count, side2_buy_usd, side2_sell_usd, side2_buy_tokens);

ALTER TABLE {db:Identifier}.trader_markets_v2 MATERIALIZE COLUMN wallet_row;
