-- exercise/wrong/idle_in_transaction.sql: TEACHING ONLY, WRONG. Every session
-- idle inside a transaction. Close, but a READ COMMITTED transaction idle
-- between statements holds no snapshot and keeps nothing from VACUUM; what
-- matters is backend_xmin (or backend_xid). Lesson 09's seeded attempt.
-- Safe: read-only, but it names sessions that hold nothing back.
-- Parameters: none.

SELECT pid, state, now() - xact_start AS xact_age
FROM pg_stat_activity
WHERE state = 'idle in transaction'
ORDER BY xact_start;
