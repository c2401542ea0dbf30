-- teaching/naive_mark.sql: TEACHING ONLY, WRONG. The second half of the naive
-- claim. Its WHERE names only the id, so it finds the row even when another
-- worker has already marked it, and simply sets 'running' again. Run as a
-- statement of its own after the other worker's mark has committed, it does
-- so at every isolation level, SERIALIZABLE included; only when it has to
-- wait for that mark do REPEATABLE READ and SERIALIZABLE refuse it (40001).
-- Lesson 01 and tests/test_race.py check both. The fault is the missing
-- status re-check.
-- Safe: NO. Shown because it is wrong.
-- Parameters: id (bigint).

UPDATE jobs SET status = 'running' WHERE id = :id;
