-- lab/wal_flushes.sql: LAB HELPER. How many times this session has flushed
-- WAL to disk (fsync), from PostgreSQL 18's I/O statistics per session. Run
-- lab/flush_stats.sql first, in its own statement, so the count is current.
-- Safe: yes, reads statistics only. PostgreSQL 18 or later.
-- Parameters: none.

SELECT coalesce(sum(fsyncs), 0)::bigint AS wal_flushes
FROM pg_stat_get_backend_io(pg_backend_pid())
WHERE object = 'wal';
