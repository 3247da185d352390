-- What the archive has indexed, not only how far: each checkpoint keeps the block its source started from
-- and the time of its own block, so the service can tell when the V1 exchanges' whole era is in (the
-- card's coverage, projections/coverage.ts).
--
-- Additive only: checkpoints written before read NULL for both (a start not known is never claimed).
ALTER TABLE {db:Identifier}.archive_checkpoints ADD COLUMN IF NOT EXISTS start_block Nullable(UInt64) DEFAULT NULL;
ALTER TABLE {db:Identifier}.archive_checkpoints ADD COLUMN IF NOT EXISTS block_ts Nullable(UInt32) DEFAULT NULL;
