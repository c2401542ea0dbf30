-- lab/complete_batch.sql: LAB HELPER. Mark a batch of claimed jobs done in one
-- statement, fenced like complete.sql: a job completes only if this claim
-- (its attempts) still holds it. For the drain measurement.
-- Safe: yes; touches only jobs this claim holds.
-- Parameters: ids (bigint[]), attempts (int[]), the two arrays in the same order.

UPDATE jobs
SET status = 'done', leased_until = NULL
FROM unnest(:ids::bigint[], :attempts::int[]) AS held(id, attempts)
WHERE jobs.id = held.id AND jobs.status = 'running' AND jobs.attempts = held.attempts;
