-- admin/checkpoint_redo_file.sql: the WAL segment file in which the last
-- checkpoint's redo point lies. Crash recovery starts there, so no earlier
-- segment is needed once this checkpoint is done (pg_control_checkpoint(),
-- PostgreSQL docs "System Information Functions", 15 and 18).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT redo_wal_file FROM pg_control_checkpoint();
