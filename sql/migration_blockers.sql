-- migration_blockers.sql: the sessions that block one session's lock request
-- right now (pg_blocking_pids), with what pg_stat_activity says each is doing:
-- its state ('idle in transaction' is the usual culprit), when its transaction
-- and its last statement began, and that statement. Asked from another session
-- while the migration waits.
-- Safe: yes, read-only; takes no lock on any table.
-- Parameters: pid (int, the waiting session's backend pid).

SELECT a.pid, a.state, a.xact_start, a.query_start, left(a.query, 200) AS query,
       a.wait_event_type, a.backend_type
FROM unnest(pg_blocking_pids(:pid)) AS b (pid)
JOIN pg_stat_activity a ON a.pid = b.pid
ORDER BY a.pid;
