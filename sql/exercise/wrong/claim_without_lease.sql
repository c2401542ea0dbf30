-- exercise/wrong/claim_without_lease.sql: TEACHING ONLY, WRONG. A claim that
-- locks and skips as it should, but writes no lease, takes jobs that are not
-- due yet (no run_at check) and takes them in whatever order the scan meets
-- them (no ORDER BY). Nobody can tell a crashed worker's job from a slow one,
-- a retry runs before its backoff, and an old job can wait for ever. Used by
-- the lesson 03 checker's tests.
-- Safe: NO. Shown because it is wrong: jobs of crashed workers are never reaped.
-- Parameters: batch (int).

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready'
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts;
