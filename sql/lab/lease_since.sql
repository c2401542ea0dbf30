-- lab/lease_since.sql: LAB HELPER. One job's status and where its lease ends,
-- both as seconds since a moment (its claim), read on the server's clock: to
-- see the heartbeat move the lease on while the handler does nothing.
-- Safe: yes, read-only.
-- Parameters: id (bigint), since (timestamptz).

SELECT status,
       extract(epoch FROM clock_timestamp() - :'since'::timestamptz)::float8 AS at_s,
       extract(epoch FROM leased_until - :'since'::timestamptz)::float8 AS leased_until_s
FROM jobs WHERE id = :id;
