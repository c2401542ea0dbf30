-- lab/complete_batch.sql: LAB HELPER. Mark a whole claimed batch done in one
-- statement, fenced per job like complete.sql, so a lab can drain 100,000 jobs
-- in seconds. Real workers complete each job as it finishes (complete.sql).
-- Safe: yes, in a lesson's database.
-- Parameters: ids (bigint[]), attempts (int[], the values the claim returned, same order).

UPDATE jobs
SET status = 'done', leased_until = NULL
FROM unnest(:ids::bigint[], :attempts::int[]) AS claimed(id, attempts)
WHERE jobs.id = claimed.id AND jobs.status = 'running' AND jobs.attempts = claimed.attempts;
