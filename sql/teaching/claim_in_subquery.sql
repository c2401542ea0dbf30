-- teaching/claim_in_subquery.sql: TEACHING ONLY. The claim written as
-- UPDATE ... WHERE id IN (SELECT ... LIMIT ... FOR UPDATE SKIP LOCKED), the
-- shape many people reach for first. Nothing in it promises the subquery runs
-- once: the planner may put it where it is evaluated again (for example as the
-- re-scanned inner side of a join), and each run of a LIMIT with SKIP LOCKED
-- can find different rows, so one statement could lock and mark more rows than
-- LIMIT says. claim.sql puts the locking read in a WITH query instead.
-- Safe: NO guarantee on the batch size; use claim.sql.
-- Parameters: batch (int), lease (interval).

UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = now() + :'lease'::interval
WHERE jobs.id IN (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token;
