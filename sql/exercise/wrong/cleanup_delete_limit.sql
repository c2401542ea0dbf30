-- exercise/wrong/cleanup_delete_limit.sql: TEACHING ONLY, WRONG. The batched
-- cleanup written as another database allows it, DELETE ... LIMIT. PostgreSQL's
-- DELETE has no LIMIT (docs, sql-delete, PostgreSQL 18), so its parser stops at
-- the word and nothing runs: the batch is picked in a subquery instead.
-- Safe: never runs (a syntax error); use cleanup_done.sql.
-- Parameters: batch (int).

DELETE FROM jobs
WHERE status = 'done'
LIMIT :batch;
