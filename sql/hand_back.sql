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
--   included. Lesson 10b's partner lab asks the server where the handed-back
--   jobs wait when its run ends (lab/hand_back_places.sql): behind every
--   ready job never handed back. Keeping its place would need the not-before
--   time and the order apart, in two columns, and every claim a Worker with a
--   rate limit uses (claim.sql, claim_priority.sql, claim_fair.sql) ordering
--   by one and filtering on the other, a filter jobs_ready_idx cannot serve:
--   the waiting jobs keep their place at the index's head, and each claim
--   reads past them. With 3,830 such jobs (ten times the lab's hand-backs)
--   ahead of 196,170 due ones, the claim's SELECT read 5,217 buffers against
--   43 without them, on PostgreSQL 18.6 and 15.18 alike (EXPLAIN (ANALYZE,
--   BUFFERS), batch 10, a not_before column added in a scratch database).
--   And claim.sql stays as lessons 01-08 teach it, so the cost is taught. The Worker claims no more of a
--   limited kind than it was granted tokens for last time (claim_cap), which
--   bounds what one claim hands back, not what a fleet does: Workers that
--   share a bucket each find it emptied by the others, and in lesson 10b's
--   lab 8 of them handed back more jobs than they ran.

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
