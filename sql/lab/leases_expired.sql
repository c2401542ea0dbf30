-- lab/leases_expired.sql: LAB HELPER. How many jobs the reaper took back
-- because their lease ran out (sql/reap.sql writes 'lease expired'; a later
-- completion leaves last_error as it was).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) FROM jobs WHERE last_error = 'lease expired';
