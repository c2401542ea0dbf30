-- exercise/wrong/unique_enqueue_check_then_insert.sql: TEACHING ONLY, WRONG. A wrong
-- answer to 10c/unique_enqueue. It checks for a live job of the kind first and
-- inserts only if there is none: right in one session, but a second session's
-- check cannot see the first's uncommitted job, so it inserts too, waits on
-- the unique index, and fails with a unique violation once the first commits.
-- Safe: yes (a scratch database).
-- Parameters: kind (text), payload (jsonb), unique_key (text).

WITH live AS (
  SELECT id FROM jobs
  WHERE kind = :'kind' AND unique_key = :'unique_key' AND status IN ('ready', 'running')
),
added AS (
  INSERT INTO jobs (kind, payload, unique_key)
  SELECT :'kind', :'payload', :'unique_key'
  WHERE NOT EXISTS (SELECT 1 FROM live)
  RETURNING id
)
SELECT id FROM added
UNION ALL
SELECT id FROM live;
