-- lab/fault_outcome.sql: LAB HELPER. Log what the queue told a worker about
-- one claim, named by its fencing token: done, fenced, retried (ready again
-- after a backoff), dead, or not_started.
-- Safe: yes, inserts only.
-- Parameters: job_id (bigint), attempts (int), fence_token (bigint), worker (text),
--   outcome (text).

INSERT INTO fault_outcomes (job_id, attempts, fence_token, worker, outcome)
VALUES (:job_id, :attempts, :fence_token, :'worker', :'outcome');
