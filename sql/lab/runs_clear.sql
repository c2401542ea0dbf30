-- lab/runs_clear.sql: LAB HELPER. Empty the job_runs ledger, so a lab counts
-- only its own runs.
-- Safe: NO outside a lab's own database: it deletes every ledger row.
-- Parameters: none.

TRUNCATE job_runs;
