-- lab/explain_read_by_status.sql: LAB HELPER. Run the prepared read_by_status
-- (teaching/prepare_read_by_status.sql) for 'ready' once, and report its plan
-- and the buffers it read, as JSON.
-- Safe: yes.
-- Parameters: none.

EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE read_by_status('ready');
