-- lab/job_row.sql: LAB HELPER. Every column of one job, to look at.
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT * FROM jobs WHERE id = :id;
