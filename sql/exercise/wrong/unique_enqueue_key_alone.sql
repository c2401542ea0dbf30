-- exercise/wrong/unique_enqueue_key_alone.sql: TEACHING ONLY, WRONG. A wrong answer
-- to 10c/unique_enqueue. It looks for a live job by the key alone, so the
-- order's paid job is dropped because its created job holds the same key.
-- Safe: yes (a scratch database).
-- Parameters: kind (text), payload (jsonb), unique_key (text).

WITH live AS (
  SELECT id FROM jobs
  WHERE unique_key = :'unique_key' AND status IN ('ready', 'running')
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
