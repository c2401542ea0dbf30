-- lab/jobs_lock_queue.sql: LAB HELPER. The lock queue on jobs: every session
-- in this database that holds or waits for a lock on the table (pg_locks),
-- with what pg_stat_activity says it is doing and whom it waits for.
-- Safe: yes, read-only; takes no lock on jobs.
-- Parameters: none.

SELECT a.pid, a.application_name, l.mode, l.granted, a.state, a.wait_event_type,
       left(a.query, 80) AS query, pg_blocking_pids(a.pid) AS blocked_by
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.relation = 'jobs'::regclass
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND a.pid <> pg_backend_pid()
ORDER BY l.granted DESC, a.query_start, a.pid;
