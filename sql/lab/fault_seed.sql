-- lab/fault_seed.sql: LAB HELPER. Add count jobs numbered n = 1..count in
-- their payload, falling due evenly over the next spread (all due now when
-- spread is zero), each allowed max_attempts tries.
-- Safe: yes, inserts only.
-- Parameters: kind (text), count (int), spread (interval), max_attempts (int).

INSERT INTO jobs (kind, payload, run_at, max_attempts)
SELECT :'kind', jsonb_build_object('n', g),
       now() + :'spread'::interval * ((g - 1)::float8 / :count),
       :max_attempts
FROM generate_series(1, :count) AS g;
