-- exercise/board/hand_back_without_fence.sql: TEACHING ONLY, WRONG. A hand-back with no fence: a worker that
-- lost its job to a new claim hands the new holder's job back under it.
-- Safe: NO; match the worker's fence_token too.
-- Parameters: id (bigint), wait (interval).

UPDATE jobs SET status = 'ready', attempts = attempts - 1, leased_until = NULL,
       run_at = now() + :'wait'::interval
WHERE id = :id AND status = 'running';
