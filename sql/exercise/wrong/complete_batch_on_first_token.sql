-- exercise/wrong/complete_batch_on_first_token.sql: TEACHING ONLY, WRONG. A
-- relay's batch completion fenced on the batch's first token for every row.
-- A claim gives each row its own token (a reaped job's is one higher than a
-- fresh one's), so rows of a mixed batch stay running until the reaper hands
-- them out again, and they are published twice. Found in review (lesson 11).
-- Safe: NO; pair each id with its own token (unnest the two arrays together).
-- Parameters: ids (bigint[]), fence_tokens (bigint[]).

UPDATE jobs
SET status = 'done', leased_until = NULL
WHERE id = ANY(:'ids'::bigint[]) AND status = 'running'
  AND fence_token = (:'fence_tokens'::bigint[])[1];
