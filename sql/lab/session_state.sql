-- lab/session_state.sql: LAB HELPER. One session's state as pg_stat_activity
-- shows it ('idle in transaction', 'active', ...), asked from another session.
-- Safe: yes, read-only.
-- Parameters: pid (int).

SELECT state FROM pg_stat_activity WHERE pid = :pid;
