-- lab/due_times.sql: LAB HELPER. When the ready jobs come due, in seconds
-- after a moment: one row per whole second, with how many jobs fall in it.
-- Safe: yes, read-only.
-- Parameters: since (timestamptz).

SELECT floor(extract(epoch FROM run_at - :'since'::timestamptz))::int AS second, count(*) AS jobs
FROM jobs WHERE status = 'ready'
GROUP BY 1 ORDER BY 1;
