-- lab/synchronous_commit.sql: LAB HELPER. The synchronous_commit setting in
-- force for this statement's transaction: whether its commit will wait for the
-- WAL to reach the disk (on) or not (off), as the server sees it.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('synchronous_commit');
