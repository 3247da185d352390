-- The tables that 0010 re-shaped as `<table>_v2`, and careers (the card folds it from trader_markets_v2
-- since 0010): nothing reads or writes them any more (their views were dropped there). Dropped in a
-- migration of their own so that 0010, which reads them for its backfill, can always be run again; a
-- repeat of this one finds nothing to drop.

DROP TABLE IF EXISTS {db:Identifier}.trader_markets;

DROP TABLE IF EXISTS {db:Identifier}.careers;

DROP TABLE IF EXISTS {db:Identifier}.whale_accumulations;

DROP TABLE IF EXISTS {db:Identifier}.market_marks;
