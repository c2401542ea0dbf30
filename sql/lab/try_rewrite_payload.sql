-- lab/try_rewrite_payload.sql: LAB HELPER. Try to rewrite what a job asks
-- for; a worker role may change a job's state, not its kind or payload, so it
-- must be refused (SQLSTATE 42501).
-- Safe: NO as the table's owner: it replaces one job's payload. Run it as a
--   restricted role.
-- Parameters: id (bigint).

UPDATE jobs SET payload = '{"tampered": true}' WHERE id = :id;
