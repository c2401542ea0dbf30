-- lab/add_check_not_valid.sql: LAB HELPER. Add a CHECK constraint without
-- checking the rows already there (NOT VALID): a short ACCESS EXCLUSIVE lock,
-- no scan. New and changed rows are checked from now on.
-- Safe: NO outside a lesson's own database: it adds a constraint
--   (lab/drop_lab_columns.sql drops it).
-- Parameters: none.

ALTER TABLE jobs ADD CONSTRAINT lab_attempts_known CHECK (attempts >= 0) NOT VALID;
