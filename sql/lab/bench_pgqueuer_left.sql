-- lab/bench_pgqueuer_left.sql: LAB HELPER. How many jobs PgQueuer's own queue
-- table still holds (it deletes a job when it finishes it). The bench reads it
-- to check PgQueuer's end state as it checks ours.
-- Safe: yes, read-only; only where PgQueuer is installed.
-- Parameters: none.

SELECT count(*) FROM pgqueuer;
