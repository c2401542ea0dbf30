-- lab/insert_job_kind.sql: LAB HELPER. Add one kind's retry policy and job
-- timeout, to ask job_kinds what its CHECKs accept.
-- Safe: yes, inserts one row; tests only.
-- Parameters: kind (text), backoff_base_s (float), backoff_cap_s (float),
--   max_attempts (int), timeout_s (float, NULL for none).

INSERT INTO job_kinds (kind, backoff_base_s, backoff_cap_s, max_attempts, timeout_s)
VALUES (:'kind', :backoff_base_s, :backoff_cap_s, :max_attempts, :timeout_s)
RETURNING kind;
