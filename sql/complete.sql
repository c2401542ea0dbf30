-- complete.sql: mark a claimed job done, fenced on attempts. A worker whose
-- lease expired and whose job was claimed again holds an old attempts value,
-- so its completion matches no row.
-- Safe: yes.
-- Parameters: id (bigint), attempts (int, the value the claim returned).

UPDATE jobs
SET status = 'done', leased_until = NULL
WHERE id = :id AND status = 'running' AND attempts = :attempts
RETURNING id;
