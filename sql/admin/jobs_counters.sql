-- admin/jobs_counters.sql: what a fresh database starts with none of, for the
-- jobs table: sequential scans and rows inserted (cumulative counters), and
-- columns with planner statistics (ANALYZE's). The tests check a reused
-- database starts with none either.
-- Safe: yes, read-only. Used by tests only.
-- Parameters: none.

SELECT (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'jobs') AS seq_scans,
       (SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'jobs') AS rows_inserted,
       (SELECT count(*)::int FROM pg_stats WHERE tablename = 'jobs') AS analyzed_columns;
