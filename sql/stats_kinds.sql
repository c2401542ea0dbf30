-- stats_kinds.sql: the dashboard's numbers per kind, for alerts that see a
-- job waiting out a backoff or finishing days late: the oldest due ready
-- job's wait, the oldest running job's age (since its current try began,
-- attempted_at) beside the kind's job timeout (job_kinds, NULL: none), and,
-- over the jobs that finished inside the recent window, enqueue-to-done at
-- the median and the 99th percentile and the failure rate.
-- Enqueue-to-done runs from enqueued_at, which no retry moves, to finished_at,
-- so it counts every backoff a job waited out (the alert that retries hid).
-- The failure rate is failed tries per try among the jobs that finished in
-- the window (a done job's tries less one, a dead job's every try): jobs
-- still retrying count once they finish, and attempts restarts at a requeue,
-- so a requeued job's earlier tries are not counted. Each sum is coalesced: a
-- window with no dead job (or no done one) has a NULL sum, and NULL + n is NULL.
-- A kind appears if it has a ready, running or recently finished job, or a
-- row in job_kinds.
-- Safe: yes, read-only. Ready and running rows are read through their partial
--   indexes; the finished rows of the window are found by a scan of jobs (no
--   index holds finished_at), whose cost grows with the table: see
--   pgq_teach/kinds.py for its measured cost.
-- Parameters: window (interval, for example '15 minutes').

WITH ready AS (
  SELECT kind, count(*) AS due, now() - min(run_at) AS oldest_due_wait
  FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  GROUP BY kind
),
running AS (
  SELECT kind, count(*) AS running, clock_timestamp() - min(attempted_at) AS oldest_running_age
  FROM jobs
  WHERE status = 'running'
  GROUP BY kind
),
finished AS (
  SELECT kind,
         count(*) FILTER (WHERE status = 'done') AS done,
         count(*) FILTER (WHERE status = 'dead') AS dead,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY finished_at - enqueued_at)
           FILTER (WHERE status = 'done') AS done_p50,
         percentile_cont(0.99) WITHIN GROUP (ORDER BY finished_at - enqueued_at)
           FILTER (WHERE status = 'done') AS done_p99,
         coalesce(sum(attempts) FILTER (WHERE status = 'dead'), 0)
           + coalesce(sum(attempts - 1) FILTER (WHERE status = 'done'), 0) AS failed_tries,
         sum(attempts) AS tries
  FROM jobs
  WHERE status IN ('done', 'dead') AND finished_at > now() - :'window'::interval
  GROUP BY kind
),
kinds AS (
  SELECT kind FROM ready UNION SELECT kind FROM running
  UNION SELECT kind FROM finished UNION SELECT kind FROM job_kinds
)
SELECT k.kind,
       coalesce(r.due, 0) AS due, r.oldest_due_wait,
       coalesce(g.running, 0) AS running, g.oldest_running_age,
       make_interval(secs => p.timeout_s) AS timeout,
       coalesce(f.done, 0) AS done, coalesce(f.dead, 0) AS dead,
       f.done_p50, f.done_p99,
       coalesce(f.failed_tries, 0)::float8 / nullif(f.tries, 0) AS failure_rate
FROM kinds k
LEFT JOIN ready r USING (kind)
LEFT JOIN running g USING (kind)
LEFT JOIN finished f USING (kind)
LEFT JOIN job_kinds p USING (kind)
ORDER BY k.kind;
