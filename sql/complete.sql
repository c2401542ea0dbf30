-- complete.sql: mark a claimed job done, fenced on the claim's fencing token.
-- A worker whose lease expired and whose job was claimed again (or reaped,
-- requeued and claimed again) holds an older token, so its completion matches
-- no row. The token never repeats: nothing resets it.
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint, the value the claim returned).

UPDATE jobs
SET status = 'done', leased_until = NULL
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING id;
