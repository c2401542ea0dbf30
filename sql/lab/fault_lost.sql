-- lab/fault_lost.sql: LAB HELPER. Claims workers learnt they no longer held,
-- each at the moment it learnt so by its own clock (job.lost_at), loaded from
-- the workers' files once every worker has stopped.
-- Safe: yes, in a fault run's own database (lab/fault_setup.sql first).
-- Parameters: job_ids (bigint[]), attempts (int[]), fence_tokens (bigint[]),
--   workers (text[]), ats (float8[], seconds since the epoch).

INSERT INTO fault_lost (job_id, attempts, fence_token, worker, at)
SELECT job_id, attempts, fence_token, worker, to_timestamp(at)
FROM unnest(:'job_ids'::bigint[], :'attempts'::int[], :'fence_tokens'::bigint[], :'workers'::text[],
            :'ats'::float8[]) AS lost (job_id, attempts, fence_token, worker, at);
