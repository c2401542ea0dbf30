-- lab/alter_jobs_default.sql: LAB HELPER. An operator's schema change that
-- needs the jobs table's ACCESS EXCLUSIVE lock: set max_attempts' default to
-- the 5 schema.sql gives it. Behind any open transaction that touched jobs it
-- waits, and every statement on jobs queues behind its request.
-- Safe: NO outside a lab's or a test's own database (it locks the whole table
--   while it waits); it changes nothing else.
-- Parameters: none.

ALTER TABLE jobs ALTER COLUMN max_attempts SET DEFAULT 5;
