-- exercise/touch_job.sql: LAB HELPER. Write one job's row without changing
-- it, so this session's open transaction takes a transaction id (backend_xid)
-- and, idle between statements, holds no snapshot: what VACUUM's horizon
-- still counts.
-- Safe: only in a scratch database (the row keeps its values).
-- Parameters: id (bigint).

UPDATE jobs SET attempts = attempts WHERE id = :id;
