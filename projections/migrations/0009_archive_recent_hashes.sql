-- The archive's reorg detection: beside the hash of its checkpoint block (block_hash), a short window of
-- recent (block, hash) pairs it published, newest last. On a mismatch with the node the newest pair the
-- node still agrees with bounds the common ancestor (how deep the reorg went).
--
-- Additive only: older checkpoints read empty arrays (and an empty block_hash: nothing to compare yet).
ALTER TABLE {db:Identifier}.archive_checkpoints ADD COLUMN IF NOT EXISTS recent_blocks Array(UInt64) DEFAULT [];
ALTER TABLE {db:Identifier}.archive_checkpoints ADD COLUMN IF NOT EXISTS recent_hashes Array(String) DEFAULT [];
