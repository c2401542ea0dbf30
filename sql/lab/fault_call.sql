-- lab/fault_call.sql: LAB HELPER. A handler's first act: log that a call of
-- this claim (job id, attempts) has started. Append-only, no unique key, so
-- every call shows, duplicates included.
-- Safe: yes, inserts only.
-- Parameters: job_id (bigint), attempts (int), worker (text).

INSERT INTO fault_calls (job_id, attempts, worker, step)
VALUES (:job_id, :attempts, :'worker', 'start');
