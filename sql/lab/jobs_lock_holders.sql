-- lab/jobs_lock_holders.sql: LAB HELPER. Which sessions hold a lock on the
-- jobs table, from pg_locks. A row lock itself is written in the row, not in
-- pg_locks; what pg_locks shows is the RowShareLock that SELECT ... FOR UPDATE
-- takes on the table while its transaction lasts (an UPDATE takes
-- RowExclusiveLock). One row per session and mode, in this database only
-- (another database's table can have the same oid as this one's jobs).
-- Safe: yes, read-only.
-- Parameters: prefix (text, the start of the application_name to show).

SELECT a.pid, a.application_name, l.mode, a.state
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.relation = 'jobs'::regclass
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.granted AND a.application_name LIKE :'prefix' || '%'
ORDER BY a.application_name, l.mode;
