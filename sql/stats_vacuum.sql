-- stats_vacuum.sql: live and dead row versions in jobs, and when autovacuum
-- last cleaned it.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT n_live_tup, n_dead_tup, last_autovacuum, autovacuum_count
FROM pg_stat_user_tables WHERE relname = 'jobs';
