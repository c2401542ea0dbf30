-- lab/fence_job.sql: LAB HELPER. Take a running job away from the claim
-- that holds it, as a reaper and a second worker's claim would: a new
-- fencing token and a fresh lease. The old claim's token no longer matches.
-- Safe: NO outside a lab's own database.
-- Parameters: id (bigint), lease (interval).

UPDATE jobs
SET fence_token = fence_token + 1, attempts = attempts + 1,
    leased_until = clock_timestamp() + :'lease'::interval
WHERE id = :id AND status = 'running'
RETURNING fence_token;
