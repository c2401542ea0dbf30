-- exercise/wrong/cleanup_all_at_once.sql: TEACHING ONLY, WRONG. Delete every
-- done job in one statement: one long transaction that holds back VACUUM for
-- the whole table while it runs. Lesson 10's seeded attempt, and its cleanup
-- lab's one-DELETE contrast to the batches.
-- Safe: correct rows, but one long transaction; use cleanup_done.sql.
-- Parameters: none.

DELETE FROM jobs WHERE status = 'done';
