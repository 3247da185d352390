-- The archive's head stage (issue 45): the blocks above the final one whose events it published as
-- provisional, per source. A row is written before the block's events are published (resolved = 0) and
-- again once the block's mark (final or retracted) is published (resolved = 1), so a restarted archive
-- publishes the mark of every block its previous run left open: no provisional event stays unresolved.
-- Nothing provisional is stored anywhere else.
CREATE TABLE IF NOT EXISTS {db:Identifier}.head_blocks
(
    source     LowCardinality(String),
    block      UInt64,
    block_hash String,
    block_ts   UInt32,
    resolved   UInt8
)
ENGINE = ReplacingMergeTree(resolved)
ORDER BY (source, block, block_hash);
