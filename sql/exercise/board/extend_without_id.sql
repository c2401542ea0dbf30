-- exercise/board/extend_without_id.sql: TEACHING ONLY, WRONG. A lease extension that matches the token
-- alone: a token counts one job's claims, so another job at the same count
-- is renewed too.
-- Safe: NO; match the job's id.
-- Parameters: fence_token (bigint), lease (interval).

UPDATE jobs SET leased_until = clock_timestamp() + :'lease'::interval
WHERE status = 'running' AND fence_token = :fence_token;
