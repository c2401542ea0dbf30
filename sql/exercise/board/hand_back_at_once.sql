-- exercise/board/hand_back_at_once.sql: TEACHING ONLY, WRONG. A hand-back that leaves run_at as it was:
-- the job is due at once, so the next claim takes it straight back, with no
-- more token than before, in a loop.
-- Safe: NO; move run_at past the wait.
-- Parameters: id (bigint), fence_token (bigint).

UPDATE jobs SET status = 'ready', attempts = greatest(attempts - 1, 0), leased_until = NULL
WHERE id = :id AND status = 'running' AND fence_token = :fence_token;
