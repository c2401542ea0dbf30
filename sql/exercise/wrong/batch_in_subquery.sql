-- exercise/wrong/batch_in_subquery.sql: TEACHING ONLY, WRONG. A batch claim as
-- UPDATE ... WHERE id IN (SELECT ... LIMIT :batch) with no lock and no status
-- re-check: two workers' subqueries pick overlapping batches, and each marks
-- the shared jobs running. Lesson 03's seeded batch attempt.
-- Safe: NO. Shown because it is wrong; it runs jobs more than once.
-- Parameters: batch (int), lease (interval).

UPDATE jobs
SET status = 'running',
    attempts = attempts + 1,
    leased_until = now() + :'lease'::interval
WHERE id IN (SELECT id FROM jobs
             WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
             ORDER BY run_at
             LIMIT :batch)
RETURNING id, kind, payload, attempts;
