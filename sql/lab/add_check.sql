-- lab/add_check.sql: LAB HELPER. The same CHECK constraint added the plain
-- way: every row is checked while the ACCESS EXCLUSIVE lock is held.
-- Safe: NO outside a lesson's own database: it adds a constraint
--   (lab/drop_lab_columns.sql drops it).
-- Parameters: none.

ALTER TABLE jobs ADD CONSTRAINT lab_attempts_known CHECK (attempts >= 0);
