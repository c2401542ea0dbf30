-- lab/fault_seed.sql: LAB HELPER. Add count jobs numbered n = 1..count in
-- their payload, falling due evenly over the next spread (all due now when
-- spread is zero), each allowed max_attempts tries; every fragile_every-th job
-- (none when it is 0) is allowed one try only, so a fault that costs it its
-- lease kills it and the fault run's requeue of dead jobs brings it back.
-- Safe: yes, inserts only.
-- Parameters: kind (text), count (int), spread (interval), max_attempts (int),
--   fragile_every (int).

INSERT INTO jobs (kind, payload, run_at, max_attempts)
SELECT :'kind', jsonb_build_object('n', g),
       now() + :'spread'::interval * ((g - 1)::float8 / :count),
       CASE WHEN :fragile_every > 0 AND g % :fragile_every = 0 THEN 1 ELSE :max_attempts END
FROM generate_series(1, :count) AS g;
