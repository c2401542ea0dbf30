-- lab/fault_outcome.sql: LAB HELPER. Log what the queue told a worker about
-- one claim: done, fenced, retried (ready again after a backoff) or dead.
-- Safe: yes, inserts only.
-- Parameters: job_id (bigint), attempts (int), worker (text), outcome (text).

INSERT INTO fault_outcomes (job_id, attempts, worker, outcome)
VALUES (:job_id, :attempts, :'worker', :'outcome');
