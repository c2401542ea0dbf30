-- lab/all_jobs.sql: LAB HELPER. Every job, in id order, to compare before and after.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT * FROM jobs ORDER BY id;
