-- set_kind_policy.sql: give a kind its retry policy and job timeout, or
-- change them. max_attempts is read by the next enqueue of the kind (jobs
-- already queued keep theirs); the backoff by the next failure of a
-- per-kind failure statement (fail_by_kind.sql); the timeout by each Worker
-- as it starts.
-- Safe: yes, one row, inserted or replaced whole; job_kinds' CHECKs refuse
--   a base above the cap, a cap over 30 days, a timeout <= 0.
-- Parameters: kind (text), backoff_base_s (float8), backoff_cap_s (float8),
--   max_attempts (int), timeout_s (float8, NULL for none).

INSERT INTO job_kinds AS k (kind, backoff_base_s, backoff_cap_s, max_attempts, timeout_s)
VALUES (:'kind', :'backoff_base_s', :'backoff_cap_s', :'max_attempts', :'timeout_s')
ON CONFLICT (kind) DO UPDATE
SET backoff_base_s = excluded.backoff_base_s, backoff_cap_s = excluded.backoff_cap_s,
    max_attempts = excluded.max_attempts, timeout_s = excluded.timeout_s
RETURNING kind;
