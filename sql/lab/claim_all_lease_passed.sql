-- lab/claim_all_lease_passed.sql: LAB HELPER. Claim every ready job no other
-- session holds in one statement, as claim.sql marks a claim (running,
-- attempts and fencing token counted), with a lease that has already passed:
-- jobs that ran long enough ago for their lease time to be over. Each claim
-- leaves an entry in jobs_running_idx that the reaper's index condition
-- (leased_until <= now()) covers.
-- Safe: NO outside a lesson's own database.
-- Parameters: none.

WITH free AS (
  SELECT id FROM jobs WHERE status = 'ready' FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running', attempts = attempts + 1, fence_token = fence_token + 1,
    leased_until = now() - interval '1 second'
FROM free
WHERE jobs.id = free.id;
