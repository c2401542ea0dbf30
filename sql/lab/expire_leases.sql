-- lab/expire_leases.sql: LAB HELPER. Move the lease deadline of the lowest
-- `count` running jobs one second into the past, as if their workers had died
-- long enough ago, so a lesson can show the reaper taking those and only those.
-- Safe: yes, in a lesson's database.
-- Parameters: count (int).

UPDATE jobs SET leased_until = now() - interval '1 second'
WHERE id IN (SELECT id FROM jobs WHERE status = 'running' ORDER BY id LIMIT :count)
RETURNING id;
