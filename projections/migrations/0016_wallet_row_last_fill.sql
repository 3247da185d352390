-- The last fill in a wallet's market row (issue 36). `wallet_row` (0012) serializes the row every trader
-- read folds; the markets list, its history depth and top-markets now order rows by the trader's last
-- fill (a market row's last_traded_at), so the serialization gains last_fill_ts, after the fields it had
-- (wallet-markets.ts, WALLET_MARKET_FIELDS). MODIFY COLUMN sets the expression for rows written from now
-- on; MATERIALIZE COLUMN rewrites the stored ones (a mutation, in the background; until it has, a stored
-- row's serialization lacks last_fill_ts and the readers order it by its last activity, as before:
-- market-rows.ts, lastTradedAt).
--
-- Idempotent: the same expression set again, the same values rewritten.

ALTER TABLE {db:Identifier}.trader_markets_v2 MODIFY COLUMN wallet_row String MATERIALIZED formatRowNoNewline('JSONEachRow',
    condition_id, resolved, winner_token_side, up_payout, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count,
    first_ts, last_ts, last_action, last_price, net_tokens1, net_tokens2, cash_flow_usd, era,
    buy_count, sell_count, buy_up_price_tokens,
    side1_buy_count, side1_sell_count, side1_buy_usd, side1_sell_usd, side1_buy_tokens,
    side2_buy_count, side2_sell_count, side2_buy_usd, side2_sell_usd, side2_buy_tokens,
    last_fill_ts);

ALTER TABLE {db:Identifier}.trader_markets_v2 MATERIALIZE COLUMN wallet_row;
