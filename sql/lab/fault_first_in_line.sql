-- lab/fault_first_in_line.sql: LAB HELPER. Put one ready job first in line:
-- due just before every other ready job, so the next claim takes it however
-- long the backlog. The fault run does it to the requeued job of a worker it
-- froze, so the job is claimed again while that worker is still frozen
-- (requeue_dead.sql makes it due now, behind every job already due).
-- Safe: NO outside a lab's own database.
-- Parameters: id (bigint).

UPDATE jobs
SET run_at = (SELECT min(run_at) FROM jobs WHERE status = 'ready') - interval '1 millisecond'
WHERE id = :id AND status = 'ready'
RETURNING id;
