-- lab/pgstattuple_jobs.sql: LAB HELPER. pgstattuple's exact view of jobs: it
-- reads every page, so unlike pg_stat_user_tables it is never an estimate.
-- Safe: yes, read-only, but it reads the whole table.
-- Parameters: none.

SELECT table_len, tuple_count, dead_tuple_count, dead_tuple_percent, free_space, free_percent
FROM pgstattuple('jobs');
