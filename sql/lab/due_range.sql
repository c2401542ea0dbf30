-- lab/due_range.sql: LAB HELPER. The first and last moment the ready jobs
-- come due, in seconds after a moment, and how many distinct instants.
-- Safe: yes, read-only.
-- Parameters: since (timestamptz).

SELECT extract(epoch FROM min(run_at) - :'since'::timestamptz)::float8 AS first_s,
       extract(epoch FROM max(run_at) - :'since'::timestamptz)::float8 AS last_s,
       count(DISTINCT run_at) AS instants
FROM jobs WHERE status = 'ready';
