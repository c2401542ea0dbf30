-- exercise/wrong/complete_batch_any_token.sql: TEACHING ONLY, WRONG. The
-- relay's batch completion fenced on "any token of the batch": each id must
-- hold one of the batch's tokens, not its own. Tokens count claims per job,
-- so a job's new token is often one a stale relay holds for another job of
-- its batch, and the stale relay finishes the new claim. Used by the lesson
-- 11 checker's tests.
-- Safe: NO. Pair each id with its own token (unnest(:ids, :fence_tokens)).
-- Parameters: ids (bigint[]), fence_tokens (bigint[]).

UPDATE jobs
SET status = 'done', leased_until = NULL
WHERE id = ANY(:'ids'::bigint[]) AND status = 'running'
  AND fence_token = ANY(:'fence_tokens'::bigint[]);
