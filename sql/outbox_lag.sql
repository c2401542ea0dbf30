-- outbox_lag.sql: the relay's alarm: how many events are not yet in the
-- broker, and the age in seconds of the oldest (0 when none), counted from
-- its enqueued_at, the moment checkout wrote it, which nothing moves
-- afterwards (schema.sql). Not from run_at: a refusal's backoff moves run_at
-- into the future, so an age counted from it restarted with every retry and
-- went negative while the event waited. A dead event
-- is not counted here (lesson 10's dead-job count watches those), but the
-- later events of its order wait behind it as ready rows
-- (claim_in_key_order.sql), so an order stuck on a dead event shows as a
-- lag that keeps growing.
-- Safe: yes, read-only.
-- Parameters: kind (text).
-- Notes: it reads every unsent row, so it costs as much as the backlog is
--   long: at 15,000 unsent events in a 150,000-row table, a bitmap scan of
--   jobs_unsent_key_idx (outbox_key_index.sql), about 460 buffers. Poll it
--   every few seconds, not in the relay's loop.

SELECT count(*),
       coalesce(greatest(extract(epoch FROM now() - min(enqueued_at)), 0), 0)::float8
FROM jobs
WHERE kind = :'kind' AND status IN ('ready', 'running');
