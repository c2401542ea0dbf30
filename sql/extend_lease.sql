-- extend_lease.sql: a heartbeat for a long job. Pushes the lease forward, but
-- only while this worker still holds the claim (fenced on attempts).
-- Safe: yes.
-- Parameters: id (bigint), attempts (int), lease (interval from now).

UPDATE jobs
SET leased_until = now() + :'lease'::interval
WHERE id = :id AND status = 'running' AND attempts = :attempts
RETURNING leased_until;
