-- exercise/wrong/claim_waits_for_locks.sql: TEACHING ONLY, WRONG. The claim
-- with FOR UPDATE but no SKIP LOCKED. No job runs twice: a worker that meets a
-- row another holds waits for its commit, then finds it taken. But every
-- worker queues behind the one holding the oldest job, which is what lesson
-- 03's SKIP LOCKED removes. Used by the lesson 03 checker's tests.
-- Safe: correct, but workers wait on each other; add SKIP LOCKED.
-- Parameters: batch (int), lease (interval).

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT :batch
  FOR UPDATE
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = clock_timestamp() + :'lease'::interval
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token;
