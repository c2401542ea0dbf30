-- teaching/full_status_index.sql: TEACHING ONLY. An index on (status, run_at)
-- over every row, done ones included: what many people write first. The
-- course's partial jobs_ready_idx covers only ready rows and stays tiny.
-- Safe: yes, but it grows with the whole history and slows every write.
-- Parameters: none.

CREATE INDEX IF NOT EXISTS jobs_status_run_at_idx ON jobs (status, run_at);
