-- exercise/board/hand_back_spending_a_try.sql: TEACHING ONLY, WRONG. A hand-back that keeps the claim's try
-- counted: every missing token or paused minute spends a try, so a busy hour
-- kills jobs that never failed.
-- Safe: NO; give the try back, attempts = greatest(attempts - 1, 0).
-- Parameters: id (bigint), fence_token (bigint), wait (interval).

UPDATE jobs SET status = 'ready', leased_until = NULL,
       run_at = greatest(run_at, now() + :'wait'::interval)
WHERE id = :id AND status = 'running' AND fence_token = :fence_token;
