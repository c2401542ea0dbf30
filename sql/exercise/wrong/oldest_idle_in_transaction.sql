-- exercise/wrong/oldest_idle_in_transaction.sql: TEACHING ONLY, WRONG. "The
-- session that has sat longest idle inside a transaction": it asks for the
-- state and the age, not for what holds VACUUM back. A READ COMMITTED
-- transaction idle between statements holds no snapshot, and it may well be
-- the oldest. It keeps to its own database, as the right answer does, so the
-- only thing wrong with it is what it asks. Used by the lesson 09 checker's tests.
-- Safe: read-only, but it names a session that holds nothing back.
-- Parameters: none.

SELECT pid FROM pg_stat_activity
WHERE datname = current_database()
  AND state = 'idle in transaction'
ORDER BY backend_start
LIMIT 1;
