-- lab/make_due.sql: LAB HELPER. Skip a retry's wait: make one job due now,
-- so a lesson can step through backoff without waiting minutes.
-- Safe: yes, in a lesson's database.
-- Parameters: id (bigint).

UPDATE jobs SET run_at = now() WHERE id = :id;
