-- exercise/wrong/claim_without_lock.sql: TEACHING ONLY, WRONG. The WITH claim
-- without its locking clause. Two workers' WITH queries can pick the same row;
-- the second UPDATE waits, then re-checks only the join on id and marks the
-- job running again. Lesson 03's seeded attempt.
-- Safe: NO. Shown because it is wrong; it runs jobs more than once.
-- Parameters: batch (int), lease (interval).

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT :batch
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    leased_until = now() + :'lease'::interval
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts;
