-- teaching/naive_mark.sql: TEACHING ONLY, WRONG. The second half of the naive
-- claim. Under READ COMMITTED it still finds the row when another worker has
-- already marked it, and simply sets 'running' again.
-- Safe: NO. Shown because it is wrong.
-- Parameters: id (bigint).

UPDATE jobs SET status = 'running' WHERE id = :id;
