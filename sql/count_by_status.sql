-- count_by_status.sql: how many jobs are in each status, counted exactly.
-- It reads every row of jobs, so it is for checks and small tables; the
-- operator's dashboard runs stats_status.sql, which stays cheap on a big one.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT status, count(*) AS jobs FROM jobs GROUP BY status ORDER BY status;
