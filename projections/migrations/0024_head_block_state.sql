-- How each head block ended (issue 45): the live plane answers a reconnecting client's open provisional
-- events from it after the plane restarted (docs/live.md, "Resuming"). A resolved row now says `final` or
-- `retracted`; an open one, and a row resolved before this column, says ''.
--
-- Additive.
ALTER TABLE {db:Identifier}.head_blocks ADD COLUMN IF NOT EXISTS state LowCardinality(String) DEFAULT '';
