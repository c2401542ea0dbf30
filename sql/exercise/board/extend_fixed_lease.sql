-- exercise/board/extend_fixed_lease.sql: TEACHING ONLY, WRONG. A lease extension with its length written
-- into the statement: right for one kind's timeout, wrong for every other.
-- Safe: NO; take the length as :lease.
-- Parameters: id (bigint), fence_token (bigint).

UPDATE jobs SET leased_until = clock_timestamp() + interval '1 hour'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token;
