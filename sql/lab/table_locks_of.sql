-- lab/table_locks_of.sql: LAB HELPER. Every table lock one session holds or
-- waits for on one table, from pg_locks, granted or not, with the sessions
-- that block it (pg_blocking_pids).
-- Safe: yes, read-only.
-- Parameters: pid (int, the session's backend pid), table (text, the table's name).

SELECT l.mode, l.granted, pg_blocking_pids(l.pid) AS blocked_by
FROM pg_locks l
WHERE l.pid = :pid AND l.locktype = 'relation' AND l.relation = to_regclass(:'table')
ORDER BY l.granted DESC, l.mode;
