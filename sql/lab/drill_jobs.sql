-- lab/drill_jobs.sql: LAB HELPER. Every job's id, status and fencing token: what the failover
-- drill compares with the claims and completions its workers noted before the failover.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT id, status, fence_token FROM jobs ORDER BY id;
