-- lab/bench_complete_all.sql: LAB HELPER. The second half of the bench's
-- ceiling: complete every running job in one set-based statement.
-- Safe: only in the bench's own database.
-- Parameters: none.

UPDATE jobs SET status = 'done', leased_until = NULL WHERE status = 'running';
