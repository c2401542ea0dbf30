-- lab/validate_lab_check.sql: LAB HELPER. Check the rows a NOT VALID
-- constraint skipped: a scan of the whole table under SHARE UPDATE EXCLUSIVE,
-- which lets every read and write through.
-- Safe: yes (it only reads the rows; it fails if one breaks the constraint).
-- Parameters: none.

ALTER TABLE jobs VALIDATE CONSTRAINT lab_attempts_known;
