-- exercise/jobs_with_key.sql: LAB HELPER. Every job holding one unique key,
-- whatever its kind and status, by id: what the unique-enqueue check counts
-- after each scene.
-- Safe: yes, read-only. No index leads with unique_key, so it scans jobs: the
--   scratch table of a check holds a handful of rows.
-- Parameters: unique_key (text).

SELECT id, kind, status FROM jobs WHERE unique_key = :'unique_key' ORDER BY id;
