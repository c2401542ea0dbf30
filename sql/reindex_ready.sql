-- reindex_ready.sql: rebuild the ready index without blocking the queue.
-- CONCURRENTLY builds a fresh copy beside the old one while claims and
-- enqueues go on, then swaps them. Use it when the index has grown after a
-- burst of jobs (index files never shrink by themselves).
-- Safe: yes for claims and enqueues, with two catches. It waits, more than
-- once, for every transaction in the database older than its own steps to
-- end, so one idle transaction (lesson 09's) stalls it for as long as it
-- stays open; set a lock_timeout to give up instead. And if it fails or is
-- cancelled, it leaves an invalid copy, jobs_ready_idx_ccnew, that every
-- write still updates: drop it (DROP INDEX CONCURRENTLY jobs_ready_idx_ccnew)
-- before trying again. It cannot run inside a transaction block, and takes
-- longer than a plain REINDEX.
-- Parameters: none.

REINDEX INDEX CONCURRENTLY jobs_ready_idx;
