-- lab/running_leases.sql: LAB HELPER. Each running job's lease deadline, as
-- its claim or its latest heartbeat wrote it, to see when each beat landed.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT id, leased_until FROM jobs WHERE status = 'running' ORDER BY id;
