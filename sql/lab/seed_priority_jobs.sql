-- lab/seed_priority_jobs.sql: LAB HELPER. Add `count` jobs of one priority in
-- one statement, each a microsecond after the one before, the first due at
-- now() plus `due_in_s` seconds (negative: already due; positive: not yet
-- due). For the priority claim's tests, plans and experiments.
-- Safe: yes, inserts only.
-- Parameters: kind (text), count (int), priority (int, 0..9), due_in_s (float).

INSERT INTO jobs (kind, payload, run_at, priority)
SELECT :'kind', jsonb_build_object('n', g),
       now() + :due_in_s * interval '1 second' + g * interval '1 microsecond', :priority
FROM generate_series(1, :count) AS g;
