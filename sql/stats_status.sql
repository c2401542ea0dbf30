-- stats_status.sql: how many jobs are in each status, and how long the oldest
-- due ready job has waited. Cheap enough to refresh every second on a big
-- table: ready and running are counted exactly through their small partial
-- indexes, and the oldest due wait is one read of jobs_ready_idx. Done and
-- dead, the bulk of a big table, are counted exactly only while jobs is small
-- (under 200,000 rows); above that they are estimated from the planner's
-- statistics (the status column's most common values, times the table's row
-- estimate), and `exact` is false. A status too rare to be among the most
-- common values is then left out. The table's rows are the statistics
-- system's live count (itself an estimate, reset at each VACUUM and ANALYZE),
-- which every write updates within seconds, and
-- reltuples only when there is none: reltuples changes only at VACUUM or
-- ANALYZE, so after a cleanup it would keep counting the deleted rows as done
-- until autoanalyze came. The status shares are as of the last ANALYZE.
-- Safe: yes, read-only.
-- Parameters: none.

WITH table_rows AS (
  SELECT coalesce(nullif(s.n_live_tup, 0), greatest(c.reltuples, 0)) AS n
  FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
  WHERE c.oid = 'jobs'::regclass
),
common AS (
  SELECT f.status, f.frac
  FROM pg_stats ps
  CROSS JOIN LATERAL unnest(ps.most_common_vals::text::text[], ps.most_common_freqs) AS f(status, frac)
  WHERE ps.schemaname = current_schema() AND ps.tablename = 'jobs' AND ps.attname = 'status'
),
estimating AS (
  SELECT (SELECT n FROM table_rows) >= 200000 AND EXISTS (SELECT FROM common) AS yes
),
finished AS (
  SELECT status, count(*) AS jobs, true AS exact
  FROM jobs
  WHERE status IN ('done', 'dead') AND NOT (SELECT yes FROM estimating)
  GROUP BY status
  UNION ALL
  SELECT status, round(frac * (SELECT n FROM table_rows))::bigint, false
  FROM common
  WHERE status IN ('done', 'dead') AND (SELECT yes FROM estimating)
),
counted AS (
  SELECT 'ready' AS status, count(*) AS jobs, true AS exact FROM jobs WHERE status = 'ready'
  UNION ALL
  SELECT 'running', count(*), true FROM jobs WHERE status = 'running'
  UNION ALL
  SELECT status, jobs, exact FROM finished
)
SELECT status, jobs, exact,
       CASE WHEN status = 'ready' THEN (
         SELECT now() - min(run_at) FROM jobs
         WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
       ) END AS oldest_due_wait
FROM counted
WHERE jobs > 0
ORDER BY status;
