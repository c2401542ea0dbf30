-- lab/fault_busy_workers.sql: LAB HELPER. The jobs the named workers are in
-- the middle of right now: each running job whose handler one of them has
-- called under the job's latest claim, which that worker made (by the
-- transition log's actor); the handler may still run, or have finished with
-- its completion not yet sent. One row per worker and job, with the job's
-- fencing token and max_attempts. A worker of a heartbeat pool holds several;
-- a short job is over in milliseconds, so asking only for each worker's
-- latest call would seldom find one, least of all on a loaded machine.
-- Safe: yes, read-only.
-- Parameters: names (text[], the workers to look at).

SELECT c.worker AS name, j.id AS job_id, j.fence_token, j.max_attempts
FROM fault_calls c
JOIN jobs j ON j.id = c.job_id AND j.attempts = c.attempts
CROSS JOIN LATERAL (
  SELECT t.actor, t.at FROM fault_transitions t
  WHERE t.job_id = j.id AND t.new_status = 'running' AND t.old_status <> 'running'
  ORDER BY t.id DESC LIMIT 1
) AS claim
WHERE c.worker = ANY (:'names'::text[]) AND c.step = 'start' AND j.status = 'running'
  AND claim.actor = c.worker AND claim.at <= c.at;
