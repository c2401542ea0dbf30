-- lab/run_starts.sql: LAB HELPER. When each recorded run began (job_runs, on
-- the server's clock), in seconds since the epoch, in order: so a test can
-- count the calls a partner saw in any one-second window.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT extract(epoch FROM started_at)::float8 AS started_s
FROM job_runs
ORDER BY started_at;
