-- lab/history_drop.sql: LAB HELPER. Drop the history table and all its partitions.
-- Safe: NO outside a lesson's own database.
-- Parameters: none.

DROP TABLE IF EXISTS jobs_history;
