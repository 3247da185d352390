-- Recomputes tape_changes for the markets staged in tape_keys under the given batches, from each
-- market's earliest touched second on. Parameters: batches Array(String), version UInt64 (newer wins).
-- The cost follows what changed: the ladder and the existing rows are read from the earliest touched
-- second on (a bound in the sort key (condition_id, ts)), not over each market's whole history.
INSERT INTO {db:Identifier}.tape_changes (condition_id, ts, last, lo, hi, is_deleted, version)
WITH
    touched AS
    (
        SELECT condition_id, min(from_ts) AS from_ts
        FROM {db:Identifier}.tape_keys
        WHERE batch IN {batches:Array(String)}
        GROUP BY condition_id
    ),
    -- The row kept last before the recomputed range: it equals the second just before it. Looked for in
    -- the day before the range first (a bound in the sort key); only a market quiet for longer is
    -- looked for over its whole earlier tape.
    before_recent AS
    (
        SELECT c.condition_id AS condition_id, argMax((c.last, c.lo, c.hi), c.ts) AS row
        FROM
        (
            -- Each second's newest version (ReplacingMergeTree's rule, without FINAL over the market's tape).
            SELECT condition_id, ts, last, lo, hi, is_deleted
            FROM {db:Identifier}.tape_changes
            WHERE condition_id IN (SELECT condition_id FROM touched)
              AND ts >= greatest((SELECT min(from_ts) FROM touched), 86400) - 86400
              AND ts < (SELECT max(from_ts) FROM touched)
            ORDER BY version DESC
            LIMIT 1 BY condition_id, ts
        ) AS c
        INNER JOIN touched AS t ON t.condition_id = c.condition_id
        WHERE c.ts < t.from_ts AND NOT c.is_deleted
        GROUP BY c.condition_id
    ),
    before AS
    (
        SELECT condition_id, row FROM before_recent
        UNION ALL
        SELECT c.condition_id AS condition_id, argMax((c.last, c.lo, c.hi), c.ts) AS row
        FROM
        (
            SELECT condition_id, ts, last, lo, hi, is_deleted
            FROM {db:Identifier}.tape_changes
            WHERE condition_id IN (SELECT condition_id FROM touched WHERE condition_id NOT IN (SELECT condition_id FROM before_recent))
              AND ts < (SELECT max(from_ts) FROM touched)
            ORDER BY version DESC
            LIMIT 1 BY condition_id, ts
        ) AS c
        INNER JOIN touched AS t ON t.condition_id = c.condition_id
        WHERE c.ts < t.from_ts AND NOT c.is_deleted
        GROUP BY c.condition_id
    ),
    seconds AS
    (
        SELECT l.condition_id AS condition_id, l.ts AS ts, max(l.last_trade).3 AS last, min(l.lo) AS lo, max(l.hi) AS hi
        FROM {db:Identifier}.price_ladder AS l
        INNER JOIN touched AS t ON t.condition_id = l.condition_id
        WHERE l.condition_id IN (SELECT condition_id FROM touched) AND l.fidelity = 1 AND l.ts >= t.from_ts
          AND l.ts >= (SELECT min(from_ts) FROM touched)
        GROUP BY l.condition_id, l.ts
    ),
    changes AS
    (
        SELECT condition_id, ts, last, lo, hi
        FROM
        (
            SELECT
                s.condition_id AS condition_id, s.ts AS ts, s.last AS last, s.lo AS lo, s.hi AS hi,
                lagInFrame((s.last, s.lo, s.hi)) OVER (PARTITION BY s.condition_id ORDER BY s.ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS previous_second,
                row_number() OVER (PARTITION BY s.condition_id ORDER BY s.ts) AS position,
                b.condition_id != '' AS has_before,
                b.row AS before_row
            FROM seconds AS s
            LEFT JOIN before AS b ON b.condition_id = s.condition_id
        )
        WHERE position = 1 AND NOT has_before
           OR position = 1 AND (last, lo, hi) != before_row
           OR position > 1 AND (last, lo, hi) != previous_second
    ),
    existing AS
    (
        SELECT e.condition_id AS condition_id, e.ts AS ts, e.last AS last, e.lo AS lo, e.hi AS hi
        FROM
        (
            -- Only the recomputed range (bounded in the sort key), each second's newest version.
            SELECT condition_id, ts, last, lo, hi, is_deleted
            FROM {db:Identifier}.tape_changes
            WHERE condition_id IN (SELECT condition_id FROM touched) AND ts >= (SELECT min(from_ts) FROM touched)
            ORDER BY version DESC
            LIMIT 1 BY condition_id, ts
        ) AS e
        INNER JOIN touched AS t ON t.condition_id = e.condition_id
        WHERE e.ts >= t.from_ts AND NOT e.is_deleted
    )
-- One pass over both (a FULL JOIN: `changes` is computed once): every recomputed change row, and a
-- deletion of each existing row of the range that is no longer a change.
SELECT
    if(c.present, c.condition_id, x.condition_id) AS condition_id,
    if(c.present, c.ts, x.ts) AS ts,
    if(c.present, c.last, x.last) AS last,
    if(c.present, c.lo, x.lo) AS lo,
    if(c.present, c.hi, x.hi) AS hi,
    NOT c.present AS is_deleted,
    {version:UInt64} AS version
FROM (SELECT condition_id, ts, last, lo, hi, 1 AS present FROM changes) AS c
FULL OUTER JOIN existing AS x ON c.condition_id = x.condition_id AND c.ts = x.ts
SETTINGS join_use_nulls = 0
