-- exercise/model/complete_batch_fenced.sql: LAB HELPER. The model answer to
-- lesson 11's "Your turn": mark a relay's whole batch done in one statement,
-- fenced per job on fence_token (bumped by every claim, never reset), so a
-- stale relay's call matches nothing, even after a requeue reset attempts.
-- Safe: only in a scratch database (the checker runs it there).
-- Parameters: ids (bigint[]), fence_tokens (bigint[], as the claim returned them, same order).

UPDATE jobs
SET status = 'done', leased_until = NULL
FROM unnest(:ids::bigint[], :fence_tokens::bigint[]) AS claimed(id, fence_token)
WHERE jobs.id = claimed.id AND jobs.status = 'running' AND jobs.fence_token = claimed.fence_token;
