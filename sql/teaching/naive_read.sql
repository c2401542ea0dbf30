-- teaching/naive_read.sql: TEACHING ONLY, WRONG. The first half of the naive
-- claim: read the oldest ready job's id. Another worker can read the same id
-- before this one writes 'running'.
-- Safe: NO. Shown because it is wrong; it runs jobs more than once.
-- Parameters: none.

SELECT id FROM jobs WHERE status = 'ready' ORDER BY run_at LIMIT 1;
