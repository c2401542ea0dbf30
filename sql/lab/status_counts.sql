-- lab/status_counts.sql: LAB HELPER. Jobs by status, for a lab's checks.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status;
