-- A fill's trade fields as one column (issue 17). A fills page (projections/fills.ts) reads every copy of
-- the wallet's fills from fills_v2 to choose each fill's kept copy and order the page; on the embedded
-- engine a point read pays for every column it reads in every part it touches (0012), whatever the rows:
-- a page over its keys (ts, condition_id, fill_id) and this one column costs little more than its keys
-- alone, and clearly less than over the eight columns it returns (figures in test/bench/RESULTS.md).
-- So the fields a page returns besides its keys are serialized once, when the fill is
-- written: `fill_row` is a MATERIALIZED column, computed by every insert (the view from fills included)
-- from the row's own columns, exactly as a JSONEachRow read of those columns returns them. Readers parse
-- it; the fields are FILL_ROW_FIELDS' (market-parts.ts, checked against the columns by
-- test/reads-shape.integration.test.ts). It adds little to an insert's CPU.
--
-- Additive: rows written before this read their fill_row computed on the fly until MATERIALIZE COLUMN
-- (a mutation, in the background) has rewritten their parts. Idempotent: the column is added once; a
-- repeated MATERIALIZE rewrites the same values.

ALTER TABLE {db:Identifier}.fills_v2 ADD COLUMN IF NOT EXISTS fill_row String MATERIALIZED formatRowNoNewline('JSONEachRow',
    side, up_price, token_side, size_tokens, usd);

ALTER TABLE {db:Identifier}.fills_v2 MATERIALIZE COLUMN fill_row;
