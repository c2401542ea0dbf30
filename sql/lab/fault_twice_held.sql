-- lab/fault_twice_held.sql: LAB HELPER. Jobs run twice while the process that
-- ran them first still held their lease. For each claim whose handler was
-- called, the transition that ended it: in a fault run handlers never fail,
-- so a claim that leaves running for ready or dead was reaped, its job taken
-- back. It counts when the job was then run again by a later claim, although
-- by the time it was taken back its first worker had been neither killed nor
-- frozen over the claim (fault_strikes) and had not learnt that it lost the
-- job (fault_lost). A claim is named by its fencing token, not its attempts,
-- which a requeue sets back: a worker that claims a job again after its
-- requeue makes a second claim with the same attempts. Must be 0: the
-- heartbeat, the lease clock, the check before each job and the lease's
-- margin are there for it.
-- Safe: yes, read-only.
-- Parameters: none.

WITH claims AS (
  SELECT t.id, t.job_id, t.new_fence_token AS fence_token, t.actor AS worker, t.at AS claimed_at
  FROM fault_transitions t
  WHERE t.old_status <> 'running' AND t.new_status = 'running'
    AND EXISTS (SELECT FROM fault_calls c
                WHERE c.step = 'start' AND c.job_id = t.job_id AND c.fence_token = t.new_fence_token
                  AND c.worker = t.actor)
),
ended AS (
  SELECT DISTINCT ON (k.id) k.*, e.new_status AS ended_as, e.at AS taken_at
  FROM claims k
  JOIN fault_transitions e ON e.job_id = k.job_id AND e.id > k.id AND e.new_status <> 'running'
  ORDER BY k.id, e.id
)
SELECT count(DISTINCT k.job_id) AS run_twice_while_held
FROM ended k
WHERE k.ended_as IN ('ready', 'dead')
  AND EXISTS (SELECT FROM fault_calls c
              WHERE c.step = 'start' AND c.job_id = k.job_id AND c.at > k.taken_at)
  AND NOT EXISTS (SELECT FROM fault_strikes s
                  WHERE s.worker = k.worker AND s.at <= k.taken_at
                    AND (s.until IS NULL OR s.until >= k.claimed_at))
  AND NOT EXISTS (SELECT FROM fault_lost l
                  WHERE l.job_id = k.job_id AND l.fence_token = k.fence_token AND l.worker = k.worker
                    AND l.at <= k.taken_at);
