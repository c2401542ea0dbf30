-- exercise/board/extend_new_token.sql: TEACHING ONLY, WRONG. A lease extension that takes a new fencing
-- token: the worker's own next completion, with the token its claim gave it,
-- then matches nothing.
-- Safe: NO; an extension changes leased_until only.
-- Parameters: id (bigint), fence_token (bigint), lease (interval).

UPDATE jobs SET leased_until = clock_timestamp() + :'lease'::interval, fence_token = fence_token + 1
WHERE id = :id AND status = 'running' AND fence_token = :fence_token;
