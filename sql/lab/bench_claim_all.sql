-- lab/bench_claim_all.sql: LAB HELPER. The first half of the bench's ceiling:
-- claim every ready job in one set-based statement, as claim.sql marks a claim
-- (running, attempts and fencing token counted, a lease written). No worker
-- could do less work per job.
-- Safe: only in the bench's own database.
-- Parameters: none.

UPDATE jobs
SET status = 'running', attempts = attempts + 1, fence_token = fence_token + 1,
    leased_until = now() + interval '5 minutes'
WHERE status = 'ready';
