-- stats_status.sql: how many jobs are in each status, and how long the oldest
-- due ready job has waited.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT status, count(*) AS jobs,
       max(now() - run_at) FILTER (
         WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
       ) AS oldest_due_wait
FROM jobs GROUP BY status ORDER BY status;
