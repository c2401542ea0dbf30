-- exercise/model/guarded_update.sql: TEACHING ONLY. The model answer to lesson
-- 01's "guarded update": a claim with no row lock that is still never handed
-- out twice, because the UPDATE repeats status = 'ready'. Under READ COMMITTED
-- a worker that waited behind another's update re-checks that condition on
-- the new row version, finds it false and updates nothing: a wasted attempt,
-- not a duplicate. claim.sql avoids the waste with FOR UPDATE SKIP LOCKED.
-- Safe: correct (never the same job to two workers at once), but wasteful
--   under contention; use claim.sql.
-- Parameters: lease (interval).

UPDATE jobs
SET status = 'running',
    attempts = attempts + 1,
    leased_until = now() + :'lease'::interval
WHERE id = (SELECT id FROM jobs
            WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
            ORDER BY run_at
            LIMIT 1)
  AND status = 'ready'
RETURNING id, kind, payload, attempts;
