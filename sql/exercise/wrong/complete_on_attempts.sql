-- exercise/wrong/complete_on_attempts.sql: TEACHING ONLY, WRONG. Completion
-- fenced on attempts, as the guide writes it. attempts is the retry count, and
-- requeuing a dead job resets it to 0, so a worker from before the requeue can
-- hold the same attempts value as the current one. Lesson 05's seeded attempt.
-- Safe: NO once jobs are ever requeued; fence on fence_token.
-- Parameters: id (bigint), attempts (int).

UPDATE jobs
SET status = 'done', leased_until = NULL
WHERE id = :id AND status = 'running' AND attempts = :attempts
RETURNING id;
