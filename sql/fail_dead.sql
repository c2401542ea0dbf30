-- fail_dead.sql: record a failure no retry can mend: the claimed job goes dead
-- at once, whatever its attempts, with finished_at written as fail.sql writes
-- it for a dead job. The outbox relay runs it for an event the broker can never
-- take as it is (over the server's max_payload, pgq_teach.infra.broker); a
-- person mends the event or deletes it, then requeue_dead.sql sends it again.
-- Fenced on the claim's fencing token like fail.sql.
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = 'dead',
    leased_until = NULL,
    finished_at = clock_timestamp(),
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status;
