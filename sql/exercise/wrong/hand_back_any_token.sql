-- exercise/wrong/hand_back_any_token.sql: TEACHING ONLY, WRONG. The relay's
-- hand-back fenced on "any token of the batch", not each id on its own
-- token. When another relay has claimed one of the batch's jobs again, its
-- new token can be one this batch holds for another job, and the hand-back
-- puts that relay's claim back to ready while it is publishing it. Used by the
-- lesson 11 checker's tests.
-- Safe: NO. Pair each id with its own token (unnest(:ids, :fence_tokens)).
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), error (text).

UPDATE jobs
SET status = 'ready', attempts = greatest(attempts - 1, 0), leased_until = NULL, last_error = :'error'
WHERE id = ANY(:'ids'::bigint[]) AND status = 'running'
  AND fence_token = ANY(:'fence_tokens'::bigint[]);
