-- exercise/model/ready_index.sql: the model answer to lesson 08's index
-- exercise: the partial index on ready jobs by run_at, as schema.sql makes it.
-- Only ready rows are in it, so it stays tiny however many done rows pile up
-- (guide #14: 16 kB beside 3,104 kB for a full index on status and run_at).
-- Safe: yes.
-- Parameters: none.

CREATE INDEX jobs_ready_idx ON jobs (run_at) WHERE status = 'ready';
