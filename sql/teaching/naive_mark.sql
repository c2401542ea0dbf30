-- teaching/naive_mark.sql: TEACHING ONLY, WRONG. The second half of the naive
-- claim. Its WHERE names only the id, so it finds the row even when another
-- worker has already marked it, and simply sets 'running' again. Run as a
-- statement of its own, no isolation level stops it, SERIALIZABLE included
-- (lesson 01 checks): the fault is the missing status re-check.
-- Safe: NO. Shown because it is wrong.
-- Parameters: id (bigint).

UPDATE jobs SET status = 'running' WHERE id = :id;
