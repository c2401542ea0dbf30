-- relax_commit.sql: let this transaction's COMMIT return before its WAL
-- reaches disk. A server crash in the next moment (about 3 x wal_writer_delay,
-- 600 ms by default) may lose the transaction; it can never corrupt the
-- database or expose half of it. Only for completions and failures: a lost
-- completion leaves the job running, the reaper returns it, and it runs again,
-- which an at-least-once queue allows. Never before a claim (a lost claim would
-- hand out its fencing token again) or an enqueue (a lost enqueue is a lost
-- job). This is the form to type in psql, between BEGIN and COMMIT; the
-- library sets the same inside the statement (complete_many_relaxed.sql,
-- fail_many_relaxed.sql), one round trip where BEGIN, this, the UPDATE and
-- COMMIT are four.
-- Safe: yes, inside a transaction block; it ends with the transaction.
-- Parameters: none.

SET LOCAL synchronous_commit = off;
