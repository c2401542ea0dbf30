-- lab/lock_lab_sessions.sql: LAB HELPER. The lock lab's own sessions in this
-- database, as pg_stat_activity sees them now: what each is doing, what it is
-- waiting for, and which sessions block it (pg_blocking_pids).
-- Safe: yes, read-only.
-- Parameters: prefix (text), the start of the lab sessions' application_name,
--   for example 'pgq-lab'.
-- psql: \set prefix 'pgq-lab' then \i sql/lab/lock_lab_sessions.sql

SELECT pid, application_name, state, wait_event_type, wait_event,
       pg_blocking_pids(pid) AS blocking_pids
FROM pg_stat_activity
WHERE datname = current_database()
  AND starts_with(application_name, :'prefix')
ORDER BY application_name, pid;
