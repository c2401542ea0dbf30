-- lab/dead_jobs.sql: LAB HELPER. Dead jobs with their last errors, to read
-- before requeuing them by hand.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT id, kind, attempts, last_error FROM jobs WHERE status = 'dead' ORDER BY id;
