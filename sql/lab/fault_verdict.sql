-- lab/fault_verdict.sql: LAB HELPER. One row that judges a fault or load run
-- from the jobs table and the ledgers of lab/fault_setup.sql, nothing else.
-- A claim is named by its fencing token: attempts repeat once requeue_dead.sql
-- resets them, even for one worker claiming a job again. The completing claim
-- is the token its job held when it moved from running to done, if the session
-- that moved it (the transition log's actor, its application_name) made that
-- claim; an unfenced completion by any other session completes no claim. The
-- rule names sessions, not claims: a session's unfenced mark while its own newer
-- claim holds the job credits that claim. The run's workers only complete fenced.
-- Jobs: enqueued, done, dead, running, ready, over_attempts (attempts above
-- max_attempts), dead_without_error. Effects: effects, duplicate_effects (rows
-- beyond one per job), done_without_effect, effects_not_done (an effect whose
-- job is not done), effects_after_done (an effect first recorded after its job
-- was done). Calls: calls, applied, absorbed (tries that found the effect
-- already there), calls_over_attempts, calls_after_done (calls that started
-- after the job was done), claims_not_completing (claims that ran the handler
-- but did not complete the job). Transitions: overwrites (any update of a done
-- row, or of a dead row other than a requeue), requeued (dead jobs put back to
-- ready), done_transitions, jobs_done_twice, transitions_over_attempts,
-- done_by_stale_claim (a job marked done by a session other than the one that
-- made its latest claim). Outcomes: reported_done, fenced, failures,
-- stale_done_accepted (a worker was told done for a claim that is not the one
-- that completed the job), fenced_own_completion (a worker was told fenced for
-- the completing claim after it completed), outcomes_across_requeue (outcomes
-- of a claim made before its job was requeued: the stale workers a requeue can
-- leave behind).
-- Safe: yes, read-only.
-- Parameters: none.

WITH claims AS NOT MATERIALIZED (
  -- A claim is a move into running from any other status, named by the token it set.
  -- (Not materialized: the lookups below then use the ledger's own index on job_id.)
  SELECT id, job_id, new_fence_token AS fence_token, actor, at
  FROM fault_transitions WHERE new_status = 'running' AND old_status <> 'running'
),
done_by AS (
  -- A fenced completion (complete.sql) checks the token and keeps it. An unfenced one
  -- (teaching/mark_done.sql) checks nothing: the token it finds may be another worker's
  -- claim, or a lapsed one, so it names a claim only if the same session made it.
  SELECT DISTINCT ON (d.job_id) d.job_id, d.at, d.actor,
         CASE WHEN d.old_status = 'running' AND EXISTS (
                SELECT FROM claims c
                WHERE c.job_id = d.job_id AND c.fence_token = d.new_fence_token AND c.actor = d.actor)
              THEN d.new_fence_token END AS fence_token
  FROM fault_transitions d WHERE d.new_status = 'done' ORDER BY d.job_id, d.id
),
completed AS (
  SELECT jobs.id AS job_id, d.fence_token, d.actor, d.at
  FROM jobs JOIN done_by d ON d.job_id = jobs.id
  WHERE jobs.status = 'done'
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
  LEFT JOIN done_by d ON d.job_id = e.job_id
),
c AS (
  SELECT count(*) FILTER (WHERE c.step = 'start') AS calls,
         count(*) FILTER (WHERE c.step = 'effect' AND c.applied) AS applied,
         count(*) FILTER (WHERE c.step = 'effect' AND NOT c.applied) AS absorbed,
         count(*) FILTER (WHERE c.attempts > jobs.max_attempts) AS calls_over_attempts,
         count(*) FILTER (WHERE c.step = 'start' AND c.at > d.at) AS calls_after_done
  FROM fault_calls c
  JOIN jobs ON jobs.id = c.job_id
  LEFT JOIN done_by d ON d.job_id = c.job_id
),
k AS (
  -- Each claim calls the handler once, so every 'start' row is a claim; all
  -- but the completing one of each done job did not complete it.
  SELECT (SELECT count(*) FROM fault_calls WHERE step = 'start')
         - (SELECT count(*) FROM completed w WHERE EXISTS (
              SELECT FROM fault_calls c WHERE c.step = 'start' AND c.job_id = w.job_id
                AND c.fence_token = w.fence_token)) AS claims_not_completing
),
t AS (
  SELECT count(*) FILTER (WHERE old_status = 'done' OR (old_status = 'dead' AND NOT (
                            new_status = 'ready' AND new_attempts = 0))) AS overwrites,
         count(*) FILTER (WHERE old_status = 'dead' AND new_status = 'ready' AND new_attempts = 0) AS requeued,
         count(*) FILTER (WHERE new_status = 'done') AS done_transitions,
         count(*) FILTER (WHERE new_attempts > max_attempts) AS transitions_over_attempts
  FROM fault_transitions
),
twice AS (
  SELECT count(*) AS jobs_done_twice
  FROM (SELECT job_id FROM fault_transitions WHERE new_status = 'done'
        GROUP BY job_id HAVING count(*) > 1) x
),
numbered AS (
  -- Number each job's claims so every later transition belongs to the claim before it.
  SELECT t.job_id, t.id, t.new_status, t.actor,
         count(c.id) OVER (PARTITION BY t.job_id ORDER BY t.id) AS claim_no
  FROM fault_transitions t LEFT JOIN claims c ON c.id = t.id
),
s AS (
  SELECT count(*) FILTER (WHERE new_status = 'done' AND actor IS DISTINCT FROM claimer) AS done_by_stale_claim
  FROM (SELECT new_status, actor,
               first_value(actor) OVER (PARTITION BY job_id, claim_no ORDER BY id) AS claimer
        FROM numbered) x
),
o AS (
  SELECT count(*) FILTER (WHERE o.outcome = 'done') AS reported_done,
         count(*) FILTER (WHERE o.outcome = 'fenced') AS fenced,
         count(*) FILTER (WHERE o.outcome IN ('retried', 'dead')) AS failures,
         count(*) FILTER (WHERE o.outcome = 'done' AND w.job_id IS NULL) AS stale_done_accepted,
         -- Told fenced after its own completion committed.
         count(*) FILTER (WHERE o.outcome = 'fenced' AND w.job_id IS NOT NULL AND o.at > w.at)
           AS fenced_own_completion,
         count(*) FILTER (WHERE EXISTS (
           SELECT FROM fault_transitions r
           WHERE r.job_id = o.job_id AND r.old_status = 'dead' AND r.new_status = 'ready'
             AND r.new_attempts = 0 AND r.at < o.at
             AND r.at > (SELECT c.at FROM claims c  -- the claim, run or not
                         WHERE c.job_id = o.job_id AND c.fence_token = o.fence_token)))
           AS outcomes_across_requeue
  FROM fault_outcomes o
  LEFT JOIN completed w ON w.job_id = o.job_id AND w.fence_token = o.fence_token
)
SELECT * FROM j, e, c, k, t, twice, s, o;
