-- exercise/wrong/unique_enqueue_same_snapshot.sql: TEACHING ONLY, WRONG. A wrong
-- answer to 10c/unique_enqueue. DO NOTHING, then the live job's id read in the
-- same statement: right in one session, but in a double click the statement's
-- snapshot predates the first session's commit, so the second gets no id.
-- Safe: yes (a scratch database).
-- Parameters: kind (text), payload (jsonb), unique_key (text).

WITH added AS (
  INSERT INTO jobs (kind, payload, unique_key)
  VALUES (:'kind', :'payload', :'unique_key')
  ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running')
  DO NOTHING
  RETURNING id
)
SELECT id FROM added
UNION ALL
SELECT id FROM jobs
WHERE kind = :'kind' AND unique_key = :'unique_key' AND status IN ('ready', 'running')
  AND NOT EXISTS (SELECT 1 FROM added);
