-- exercise/board/extend_without_status.sql: TEACHING ONLY, WRONG. A lease extension that forgets the
-- status: a worker whose job the reaper has already returned to ready gives
-- it a lease again, and the job sits ready with a lease nobody holds.
-- Safe: NO; keep status = 'running' in the WHERE.
-- Parameters: id (bigint), fence_token (bigint), lease (interval).

UPDATE jobs SET leased_until = clock_timestamp() + :'lease'::interval
WHERE id = :id AND fence_token = :fence_token;
