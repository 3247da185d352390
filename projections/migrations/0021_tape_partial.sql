-- A recording of the live plane is published as it goes (its events, then its metadata so far) and
-- saved whole when its watch ends; a tape whose recording never finished (the serving instance stopped,
-- or part of it could not be published) says so instead of passing for a whole one (issue 38).
--
-- Additive: tapes written before are whole (false).
ALTER TABLE {db:Identifier}.tapes ADD COLUMN IF NOT EXISTS partial Bool DEFAULT false;
