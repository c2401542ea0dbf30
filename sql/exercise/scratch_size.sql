-- exercise/scratch_size.sql: LAB HELPER. The bytes the scratch database takes on disk,
-- read by the checker after each run of a learner statement that writes (sandbox.execute).
-- Safe: yes, read-only; any role that may connect to the database may read its size.
-- Parameters: none.

SELECT pg_database_size(current_database());
