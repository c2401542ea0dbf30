-- exercise/scratch_state.sql: LAB HELPER. A fingerprint of a scratch database:
-- its tables and indexes, and every job row, so a test can show that a refused
-- statement changed nothing.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT (SELECT string_agg(relname || ':' || relkind::text, ',' ORDER BY relname)
        FROM pg_class WHERE relnamespace = 'public'::regnamespace) AS relations,
       (SELECT md5(coalesce(string_agg(j::text, ',' ORDER BY j.id), ''))
        FROM jobs AS j) AS jobs_digest;
