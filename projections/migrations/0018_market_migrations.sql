-- Protocol V2 markets migrated from the CTF system: the archive reads `MigrationConditionRegistered` and
-- books the V2 condition's positions under the legacy condition id, which the market keeps. This table is
-- where the link lands, so that a restarted archive (or another instance) knows it without the log.
CREATE TABLE IF NOT EXISTS {db:Identifier}.market_migrations
(
    v2_condition_id String,
    condition_id    String
)
ENGINE = ReplacingMergeTree
ORDER BY v2_condition_id
SETTINGS non_replicated_deduplication_window = 1000;
