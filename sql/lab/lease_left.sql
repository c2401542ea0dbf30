-- lab/lease_left.sql: LAB HELPER. One job's status, attempts and the seconds
-- left on its lease (negative once it has passed), to draw the lease moving.
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT status, attempts, extract(epoch FROM leased_until - clock_timestamp())::float8 AS lease_left_s
FROM jobs WHERE id = :id;
