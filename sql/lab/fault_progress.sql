-- lab/fault_progress.sql: LAB HELPER. How far a run has got: jobs by status,
-- jobs never claimed yet, and how long the most overdue running job has been
-- past its lease (seconds; 0 when none is).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) FILTER (WHERE status = 'done')    AS done,
       count(*) FILTER (WHERE status = 'dead')    AS dead,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'ready')   AS ready,
       count(*) FILTER (WHERE attempts = 0)       AS never_claimed,
       coalesce(extract(epoch FROM max(clock_timestamp() - leased_until)
                FILTER (WHERE status = 'running' AND leased_until < clock_timestamp())), 0)::float8
         AS overdue_seconds
FROM jobs;
