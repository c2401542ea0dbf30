-- lab/session_horizon.sql: LAB HELPER. What one session holds that could stop
-- VACUUM, asked from another session: its state, its transaction ID
-- (backend_xid, set once it writes or locks a row) and the xmin of the
-- snapshot it keeps (backend_xmin). A session with neither holds nothing back.
-- Safe: yes, read-only.
-- Parameters: pid (int).

SELECT state, backend_xid, backend_xmin FROM pg_stat_activity WHERE pid = :pid;
