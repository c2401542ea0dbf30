-- exercise/wrong/notify_whole_job.sql: TEACHING ONLY, WRONG. Enqueue and
-- notify in one statement, but send the whole job as the payload. It works
-- until a payload reaches 8,000 bytes, and a notification is a hint that can
-- be folded or lost: the data belongs in the table. Lesson 07's seeded attempt.
-- Safe: works for small payloads; send the id instead.
-- Parameters: kind (text), payload (jsonb).

WITH job AS (
  INSERT INTO jobs (kind, payload) VALUES (:'kind', :'payload')
  RETURNING *
)
SELECT pg_notify('jobs_ready', row_to_json(job)::text) FROM job;
