-- lab/expire_leases.sql: LAB HELPER. Move the leases of some running jobs a
-- second into the past, as if their worker had stalled past them, so the
-- reaper finds them expired at once: a test stages the stall instead of
-- sleeping through the lease.
-- Safe: NO outside a lesson's or a test's own database.
-- Parameters: ids (bigint[]).

UPDATE jobs SET leased_until = now() - interval '1 second'
WHERE id = ANY (:'ids'::bigint[]) AND status = 'running';
