-- The tokens a wallet redeemed in a market, in its market row (issue 39). The skill answer tells a market
-- held to its resolution (redeemed, or still held) from one closed before it, and now reads that from the
-- wallet's rows every trader read shares (projections/skill.ts) instead of a statement of its own: the
-- serialization gains redeem_tokens after the fields it had (wallet-markets.ts, WALLET_MARKET_FIELDS).
-- MODIFY COLUMN sets the expression for rows written from now on; MATERIALIZE COLUMN rewrites the stored
-- ones (a mutation, in the background; until it has, a stored row's serialization lacks redeem_tokens and
-- the skill answer tells a redeemed market by its holdings alone).
--
-- Idempotent: the same expression set again, the same values rewritten.

ALTER TABLE {db:Identifier}.trader_markets_v2 MODIFY COLUMN wallet_row String MATERIALIZED formatRowNoNewline('JSONEachRow',
    condition_id, resolved, winner_token_side, up_payout, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count,
    first_ts, last_ts, last_action, last_price, net_tokens1, net_tokens2, cash_flow_usd, era,
    buy_count, sell_count, buy_up_price_tokens,
    side1_buy_count, side1_sell_count, side1_buy_usd, side1_sell_usd, side1_buy_tokens,
    side2_buy_count, side2_sell_count, side2_buy_usd, side2_sell_usd, side2_buy_tokens,
    last_fill_ts, redeem_tokens);

ALTER TABLE {db:Identifier}.trader_markets_v2 MATERIALIZE COLUMN wallet_row;
