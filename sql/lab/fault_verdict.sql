-- lab/fault_verdict.sql: LAB HELPER. One row that judges a fault or load run
-- from the jobs table and the ledgers of lab/fault_setup.sql, nothing else.
-- Jobs: enqueued, done, dead, running, ready, over_attempts (attempts above
-- max_attempts), dead_without_error. Effects: effects, duplicate_effects (rows
-- beyond one per job), done_without_effect, effects_not_done (an effect whose
-- job is not done), effects_after_done (an effect first recorded after its job
-- was done). Calls: calls, applied, absorbed (tries that found the effect
-- already there), calls_over_attempts, calls_after_done (calls that started
-- after the job was done), claims_not_completing (claims that ran the handler
-- but did not complete the job). Transitions: overwrites (any update of a done
-- or dead row), done_transitions, jobs_done_twice, transitions_over_attempts.
-- Outcomes: reported_done, fenced, failures, stale_done_accepted (a worker was
-- told done for a claim that is not the one that completed the job),
-- fenced_own_completion (a worker was told fenced for the completing claim).
-- Safe: yes, read-only.
-- Parameters: none.

WITH done_at AS (
  SELECT job_id, min(at) AS at FROM fault_transitions
  WHERE new_status = 'done' GROUP BY job_id
),
j AS (
  SELECT count(*) AS enqueued,
         count(*) FILTER (WHERE status = 'done') AS done,
         count(*) FILTER (WHERE status = 'dead') AS dead,
         count(*) FILTER (WHERE status = 'running') AS running,
         count(*) FILTER (WHERE status = 'ready') AS ready,
         count(*) FILTER (WHERE attempts > max_attempts) AS over_attempts,
         count(*) FILTER (WHERE status = 'dead' AND last_error IS NULL) AS dead_without_error,
         count(*) FILTER (WHERE status = 'done' AND NOT EXISTS (
           SELECT FROM fault_effects e WHERE e.job_id = jobs.id)) AS done_without_effect
  FROM jobs
),
e AS (
  SELECT count(*) AS effects,
         count(*) - count(DISTINCT e.job_id) AS duplicate_effects,
         count(*) FILTER (WHERE jobs.status IS DISTINCT FROM 'done') AS effects_not_done,
         count(*) FILTER (WHERE e.at > d.at) AS effects_after_done
  FROM fault_effects e
  LEFT JOIN jobs ON jobs.id = e.job_id
  LEFT JOIN done_at d ON d.job_id = e.job_id
),
c AS (
  SELECT count(*) FILTER (WHERE c.step = 'start') AS calls,
         count(*) FILTER (WHERE c.step = 'effect' AND c.applied) AS applied,
         count(*) FILTER (WHERE c.step = 'effect' AND NOT c.applied) AS absorbed,
         count(*) FILTER (WHERE c.attempts > jobs.max_attempts) AS calls_over_attempts,
         count(*) FILTER (WHERE c.step = 'start' AND c.at > d.at) AS calls_after_done
  FROM fault_calls c
  JOIN jobs ON jobs.id = c.job_id
  LEFT JOIN done_at d ON d.job_id = c.job_id
),
k AS (
  SELECT count(*) AS claims_not_completing
  FROM (SELECT DISTINCT job_id, attempts FROM fault_calls WHERE step = 'start') claim
  JOIN jobs ON jobs.id = claim.job_id
  WHERE NOT (jobs.status = 'done' AND jobs.attempts = claim.attempts)
),
t AS (
  SELECT count(*) FILTER (WHERE old_status IN ('done', 'dead')) AS overwrites,
         count(*) FILTER (WHERE new_status = 'done') AS done_transitions,
         count(*) FILTER (WHERE new_attempts > max_attempts) AS transitions_over_attempts
  FROM fault_transitions
),
twice AS (
  SELECT count(*) AS jobs_done_twice
  FROM (SELECT job_id FROM fault_transitions WHERE new_status = 'done'
        GROUP BY job_id HAVING count(*) > 1) x
),
o AS (
  SELECT count(*) FILTER (WHERE o.outcome = 'done') AS reported_done,
         count(*) FILTER (WHERE o.outcome = 'fenced') AS fenced,
         count(*) FILTER (WHERE o.outcome IN ('ready', 'dead')) AS failures,
         count(*) FILTER (WHERE o.outcome = 'done'
                          AND NOT (jobs.status = 'done' AND jobs.attempts = o.attempts)) AS stale_done_accepted,
         count(*) FILTER (WHERE o.outcome = 'fenced'
                          AND jobs.status = 'done' AND jobs.attempts = o.attempts) AS fenced_own_completion
  FROM fault_outcomes o
  JOIN jobs ON jobs.id = o.job_id
)
SELECT * FROM j, e, c, k, t, twice, o;
