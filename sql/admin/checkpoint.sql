-- admin/checkpoint.sql: write every dirty page now, so the WAL before this point
-- is no longer needed and its segment files can be removed or recycled.
-- Safe: yes; it costs a burst of writes. Needs a superuser or pg_checkpoint.
-- Parameters: none.

CHECKPOINT;
