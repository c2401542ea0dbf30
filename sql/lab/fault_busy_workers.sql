-- lab/fault_busy_workers.sql: LAB HELPER. Which of the named workers are in
-- the middle of a job right now (the claim of its latest handler call is
-- still running), with that job's id, fencing token and max_attempts.
-- Safe: yes, read-only.
-- Parameters: names (text[], the workers to look at).

SELECT w.name, j.id AS job_id, j.fence_token, j.max_attempts
FROM unnest(:'names'::text[]) AS w(name)
CROSS JOIN LATERAL (
  SELECT c.job_id, c.attempts FROM fault_calls c
  WHERE c.worker = w.name AND c.step = 'start'
  ORDER BY c.id DESC LIMIT 1
) AS latest
JOIN jobs j ON j.id = latest.job_id AND j.attempts = latest.attempts
WHERE j.status = 'running';
