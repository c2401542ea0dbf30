-- exercise/wrong/unguarded_update.sql: TEACHING ONLY, WRONG. The first claim
-- many people write: one UPDATE whose subquery picks the oldest ready job.
-- Two workers' subqueries can pick the same id; the second UPDATE waits for
-- the first, then re-checks only id = <that id>, which still holds, and marks
-- the job running again: both workers run it. Lesson 01's seeded attempt.
-- Safe: NO. Shown because it is wrong; it runs jobs more than once.
-- Parameters: lease (interval).

UPDATE jobs
SET status = 'running',
    attempts = attempts + 1,
    leased_until = now() + :'lease'::interval
WHERE id = (SELECT id FROM jobs
            WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
            ORDER BY run_at
            LIMIT 1)
RETURNING id, kind, payload, attempts;
