-- hand_back.sql: give claimed jobs back without spending a try, to wait a
-- while first: a shared rate limit had no token for them, or their kind is
-- paused after failures in a row. As release_many.sql, fenced row by row,
-- each back to ready with its attempt given back; but its run_at moves to
-- at least now plus its wait, so no Worker claims it again before then
-- (release_many.sql keeps run_at, since its jobs may run at once).
-- Waiting spends no try and loses nothing the job had: last_error stays the
-- job's own (a hand-back is not the job's failure; the caller's reason goes
-- in its report), and a job whose run_at is already past its wait keeps it.
-- Safe: yes. Locks its rows in id order, as complete_many.sql does.
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), waits_s (float8[]),
--   all the same length, in the same order.
-- Notes: run_at is both the claims' order and the earliest a job may run, so
--   a job that must wait takes run_at = now + its wait: once due again it
--   goes behind every job due before that, the backlog it was ahead of
--   included. Keeping its place as well needs a second column (an order key
--   apart from the due time), which the schema does not have: the Worker
--   claims no more of a limited kind than it holds tokens for (claim_cap), so
--   few jobs are handed back (docs/beyond-fifo.md).

WITH mine AS (
  SELECT jobs.id, back.wait_s
  FROM jobs
  JOIN unnest(:'ids'::bigint[], :'fence_tokens'::bigint[], :'waits_s'::float8[]) AS back (id, fence_token, wait_s)
    ON jobs.id = back.id AND jobs.fence_token = back.fence_token
  WHERE jobs.status = 'running'
  ORDER BY jobs.id
  FOR UPDATE OF jobs
)
UPDATE jobs
SET status = 'ready', attempts = greatest(jobs.attempts - 1, 0), leased_until = NULL,
    run_at = greatest(jobs.run_at, now() + make_interval(secs => mine.wait_s))
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id;
