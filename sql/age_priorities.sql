-- age_priorities.sql: aging, one answer to starvation under priorities. Every
-- ready job that has been due for longer than `after` joins priority 0, the
-- first; its run_at is older than the urgent jobs that keep arriving, so the
-- priority claim (claim_priority.sql, ORDER BY priority, run_at) takes it
-- before them. Returns the ids moved.
-- Safe: yes. Run it now and then (each reaper pass, say); it writes only rows
--   that have waited past `after`, once each (a job already at 0 is left).
-- Parameters: after (interval).
-- Notes: the job's own priority is overwritten: a job that waited long
--   enough becomes urgent, and stays so if it fails and retries. Aging by
--   one step per interval instead would keep the order among the aged jobs,
--   at the cost of a write per step. The rows are found through
--   jobs_ready_priority_idx (priority > 0, then run_at), whose entries for a
--   moved job change: one index write each, besides the row's.

UPDATE jobs
SET priority = 0
WHERE status = 'ready' AND priority > 0
  AND run_at BETWEEN '-infinity' AND now() - :'after'::interval
RETURNING id;
