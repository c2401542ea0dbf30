-- outbox_lag.sql: the relay's alarm: how many events are not yet in the
-- broker, and the age in seconds of the oldest (0 when none), counted from
-- its run_at (when it was written, or when its backoff ends).
-- Safe: yes, read-only.
-- Parameters: kind (text).

SELECT count(*),
       coalesce(extract(epoch FROM now() - min(run_at)), 0)::float8
FROM jobs
WHERE kind = :'kind' AND status IN ('ready', 'running');
