-- lab/drop_fence_token.sql: LAB HELPER. Take the jobs table back to its shape
-- before the fencing token existed, so a test can show schema.sql upgrades it.
-- Safe: only in a test's own database: it drops a column the queue needs.
-- Parameters: none.

ALTER TABLE jobs DROP COLUMN fence_token;
