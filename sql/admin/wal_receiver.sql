-- admin/wal_receiver.sql: on a replica, the WAL receiver's process id and its state
-- (streaming once it is connected to the primary); no row before it starts.
-- Safe: yes, read-only. Needs pg_read_all_stats (or a superuser) for the pid.
-- Parameters: none.

SELECT pid, status FROM pg_stat_wal_receiver;
