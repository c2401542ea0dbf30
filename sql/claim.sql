-- claim.sql: the claim the course teaches. One statement picks the oldest due
-- ready jobs, locks them while skipping rows other workers hold, marks them
-- running, counts the attempt, takes a new fencing token, writes a lease and
-- the moment of the attempt (attempted_at).
-- Safe: yes. This is the production claim.
-- Parameters: batch (int, 1..10000), lease (interval).
-- Notes: the lease (and attempted_at) counts from the moment the statement runs
--   (clock_timestamp()), not from the start of a transaction it may be part
--   of, so a claim made late in a long transaction still gets a whole lease.
--   The locking clause sits inside the WITH query, which is the only way
--   it locks rows there; 'ready' is a literal so the planner can prove the
--   partial index jobs_ready_idx applies.

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = clock_timestamp() + :'lease'::interval,
    attempted_at = clock_timestamp()
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token;
