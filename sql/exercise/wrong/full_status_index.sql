-- exercise/wrong/full_status_index.sql: TEACHING ONLY, WRONG. The index most
-- people write first: status and run_at over every row. The claim uses it, but
-- it holds an entry for every done job too, so it grows with history (guide
-- #14: 3,104 kB beside 16 kB for the partial index). Lesson 08's seeded attempt.
-- Safe: correct plans, but a large index that keeps growing; use a partial index.
-- Parameters: none.

CREATE INDEX jobs_status_run_at_idx ON jobs (status, run_at);
