-- lab/set_attempts.sql: LAB HELPER. Jump a job's retry count, so a test can
-- reach counts no real run would (40, 1,000, 2^31 - 2) without failing it that
-- many times. The fencing token is left alone.
-- Safe: only in a test's own database.
-- Parameters: id (bigint), attempts (int).

UPDATE jobs SET attempts = :attempts WHERE id = :id;
