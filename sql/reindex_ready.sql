-- reindex_ready.sql: rebuild the ready index without blocking the queue.
-- CONCURRENTLY builds a fresh copy beside the old one while claims and
-- enqueues go on, then swaps them. Use it when the index has grown after a
-- burst of jobs (index files never shrink by themselves).
-- Safe: yes. It cannot run inside a transaction block, and takes longer than
-- a plain REINDEX.
-- Parameters: none.

REINDEX INDEX CONCURRENTLY jobs_ready_idx;
