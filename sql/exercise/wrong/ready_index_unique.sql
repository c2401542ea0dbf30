-- exercise/wrong/ready_index_unique.sql: TEACHING ONLY, WRONG. The partial
-- index on ready jobs by run_at, made UNIQUE. The claim reads it as well as
-- the plain one, but two jobs due at the same instant (a batch enqueued in
-- one statement, two producers in the same microsecond) can no longer both be
-- enqueued. Used by the lesson 08 checker's tests.
-- Safe: NO. Enqueueing fails on a duplicate run_at.
-- Parameters: none.

CREATE UNIQUE INDEX jobs_ready_idx ON jobs (run_at) WHERE status = 'ready';
