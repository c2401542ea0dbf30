-- teaching/prepare_read_by_status.sql: TEACHING ONLY. The claim's locking read
-- with status as a parameter ($1) instead of the literal 'ready', prepared in
-- this session as read_by_status. Under a generic plan the planner cannot
-- prove status = 'ready', so it cannot use the partial index jobs_ready_idx.
-- Safe: yes; it only prepares.
-- Parameters: none (the prepared statement takes the status when executed).

PREPARE read_by_status(text) AS
SELECT id FROM jobs
WHERE status = $1 AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT 1
FOR UPDATE SKIP LOCKED;
