-- lab/fault_call.sql: LAB HELPER. A handler's first act: log that a call of
-- this claim (job id, attempts, and its fencing token, which alone names
-- one claim: a requeue sets attempts back to 0) has started. Append-only, no
-- unique key, so every call shows, duplicates included.
-- Safe: yes, inserts only.
-- Parameters: job_id (bigint), attempts (int), fence_token (bigint), worker (text).

INSERT INTO fault_calls (job_id, attempts, fence_token, worker, step)
VALUES (:job_id, :attempts, :fence_token, :'worker', 'start');
