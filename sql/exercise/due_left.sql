-- exercise/due_left.sql: LAB HELPER. How many ready jobs are due now, so the
-- checker can tell "the queue is empty" from "this claim came back empty".
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) FROM jobs WHERE status = 'ready' AND run_at <= now();
