-- lab/fault_lost.sql: LAB HELPER. A worker notes that it no longer holds a
-- job, at the moment it learnt so by its own clock (the write itself may be
-- late, riding out an outage).
-- Safe: yes, in a fault run's own database (lab/fault_setup.sql first).
-- Parameters: job_id (bigint), attempts (int), worker (text), at (float8,
--   seconds since the epoch).

INSERT INTO fault_lost (job_id, attempts, worker, at) VALUES (:job_id, :attempts, :'worker', to_timestamp(:at));
