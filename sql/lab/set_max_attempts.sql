-- lab/set_max_attempts.sql: LAB HELPER. Change one job's max_attempts, as an
-- operator might, to show why fail.sql and reap.sql compare with greatest().
-- Safe: yes.
-- Parameters: id (bigint), max_attempts (int).

UPDATE jobs SET max_attempts = :max_attempts WHERE id = :id;
