-- teaching/guarded_mark.sql: TEACHING ONLY. The second half of the guarded
-- (optimistic) claim: after teaching/naive_read.sql, mark the job running only
-- if it is still ready. Under READ COMMITTED an UPDATE that had to wait for
-- another worker's update re-checks its WHERE against the newest row version,
-- so the loser finds status 'running' and updates 0 rows: no job runs twice.
-- The caller reads the row count; 0 means the claim was wasted and it must
-- read again.
-- Safe: correct, but every lost race costs a wasted round trip; use claim.sql.
-- Parameters: id (bigint).

UPDATE jobs SET status = 'running' WHERE id = :id AND status = 'ready';
