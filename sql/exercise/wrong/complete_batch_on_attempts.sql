-- exercise/wrong/complete_batch_on_attempts.sql: TEACHING ONLY, WRONG. A relay's
-- batch completion fenced per job on attempts. attempts is the retry count, and
-- requeuing a dead job resets it to 0, so a relay from before the requeue can
-- hold the same attempts value as the current claim. Lesson 11's seeded attempt.
-- Safe: NO once jobs are ever requeued; fence on fence_token.
-- Parameters: ids (bigint[]), attempts (int[], as the claim returned them, same order).

UPDATE jobs
SET status = 'done', leased_until = NULL
FROM unnest(:ids::bigint[], :attempts::int[]) AS claimed(id, attempts)
WHERE jobs.id = claimed.id AND jobs.status = 'running' AND jobs.attempts = claimed.attempts;
