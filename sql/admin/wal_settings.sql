-- admin/wal_settings.sql: how the server keeps its WAL: max_wal_size (a checkpoint
-- starts when this much has been written since the last, in MB) and wal_recycle (on:
-- old segment files are renamed and kept for reuse; off: they are removed).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_size_bytes(current_setting('max_wal_size')) / 1048576 AS max_wal_mb,
       current_setting('wal_recycle') AS wal_recycle;
