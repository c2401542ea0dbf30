-- lab/fault_effect.sql: LAB HELPER. The idempotent effect: record it once per
-- job (a second try finds the row and does nothing), and log the try in the
-- call log in the same statement, so the log says which calls applied the
-- effect and which were absorbed as duplicates.
-- Safe: yes, inserts only.
-- Parameters: job_id (bigint), attempts (int), worker (text).

WITH effect AS (
  INSERT INTO fault_effects (job_id, attempts, worker)
  VALUES (:job_id, :attempts, :'worker')
  ON CONFLICT (job_id) DO NOTHING
  RETURNING job_id
)
INSERT INTO fault_calls (job_id, attempts, worker, step, applied)
SELECT :job_id, :attempts, :'worker', 'effect', EXISTS (SELECT FROM effect)
RETURNING applied;
