-- lab/table_bloat.sql: LAB HELPER. The jobs table's size on disk, its indexes'
-- total size, and the live and dead row versions the statistics report.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_relation_size('jobs') AS table_bytes,
       pg_indexes_size('jobs') AS index_bytes,
       n_live_tup, n_dead_tup
FROM pg_stat_user_tables WHERE relname = 'jobs';
