-- teaching/mark_done.sql: TEACHING ONLY. Mark a job done with no fencing
-- check, as the naive and hold-the-transaction workers do. Inside a held
-- transaction the row lock is the guard; elsewhere, use complete.sql.
-- Safe: only inside the transaction that holds the row lock.
-- Parameters: id (bigint).

UPDATE jobs SET status = 'done', leased_until = NULL WHERE id = :id;
