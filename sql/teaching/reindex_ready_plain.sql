-- teaching/reindex_ready_plain.sql: TEACHING ONLY. Rebuild the ready index
-- without CONCURRENTLY. It takes an ACCESS EXCLUSIVE lock on the index until
-- its transaction ends, and the planner locks every index of a table when it
-- plans any query on it, so nearly every query on jobs waits, not only the
-- ones that would use this index. Lesson 08 holds it open in a transaction and
-- shows a read by id waiting behind it.
-- Safe: NO on a live queue: it blocks nearly every query on jobs while it runs.
-- Parameters: none.

REINDEX INDEX jobs_ready_idx;
