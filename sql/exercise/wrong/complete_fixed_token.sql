-- exercise/wrong/complete_fixed_token.sql: TEACHING ONLY, WRONG. Completion
-- "fenced" by a token number written into the statement: it compares the
-- parameter with the 2 of one story, never the job's own fence_token column.
-- It fits that story and no other: a stale worker passing 2 finishes any job,
-- and the current worker of any other claim finishes nothing. Used by the
-- lesson 05 checker's tests.
-- Safe: NO. Shown because it is wrong; fence on the column.
-- Parameters: id (bigint), fence_token (bigint).

UPDATE jobs SET status = 'done' WHERE id = :id AND :fence_token = 2;
