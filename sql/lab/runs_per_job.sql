-- lab/runs_per_job.sql: LAB HELPER. For every job, how many runs the ledger
-- holds and which workers ran it (a job never run has 0 runs).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT jobs.id AS job_id, count(job_runs.job_id) AS runs,
       coalesce(array_agg(job_runs.worker ORDER BY job_runs.started_at)
                FILTER (WHERE job_runs.job_id IS NOT NULL), '{}') AS workers
FROM jobs
LEFT JOIN job_runs ON job_runs.job_id = jobs.id
GROUP BY jobs.id
ORDER BY jobs.id;
