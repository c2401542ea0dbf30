-- lab/jobs_table_pages.sql: LAB HELPER. How many 8 kB pages the jobs table's
-- heap holds (indexes aside): one sequential pass over it reads this many, the
-- yardstick for a plan's buffer count.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_relation_size('jobs') / current_setting('block_size')::int AS pages;
