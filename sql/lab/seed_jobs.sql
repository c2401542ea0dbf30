-- lab/seed_jobs.sql: LAB HELPER. Add many due jobs in one statement, for
-- experiments. Each gets its own run_at a microsecond apart, oldest first, so
-- "the oldest due job" is well defined. Real code enqueues with enqueue.sql.
-- Safe: yes, inserts only.
-- Parameters: kind (text), count (int).

INSERT INTO jobs (kind, payload, run_at)
SELECT :'kind', jsonb_build_object('n', g),
       now() - interval '1 hour' + g * interval '1 microsecond'
FROM generate_series(1, :count) AS g;
