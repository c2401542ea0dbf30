-- exercise/model/enqueue_and_notify.sql: the model answer to lesson 07's
-- wake-up exercise: enqueue one job and notify in the same statement, so the
-- notification goes only if the job commits, and carries only the new job's
-- id (a payload must stay under 8,000 bytes; the data is in the table).
-- Safe: yes.
-- Parameters: kind (text), payload (jsonb).

WITH job AS (
  INSERT INTO jobs (kind, payload) VALUES (:'kind', :'payload')
  RETURNING id
)
SELECT id, pg_notify('jobs_ready', id::text) FROM job;
