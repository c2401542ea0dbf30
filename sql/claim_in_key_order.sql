-- claim_in_key_order.sql: the outbox relay's claim. Like claim.sql, but it
-- takes only the oldest unsent event of each order: an event whose order has
-- an earlier event not yet sent (ready, waiting out a backoff, held by a
-- relay, or dead) is left alone, so one order's events reach the broker in
-- the order they were written, whatever fails, and however many relays run,
-- on one condition: each order's events commit in id order. NOT EXISTS sees
-- only committed rows, so if id 10 is drawn first and id 11 commits first, 11
-- is claimed as the head and published first. The writer meets the condition
-- by locking the order's row before it writes an event (lock_order.sql,
-- pgq_teach.outbox.write_event).
-- Safe: yes. The production relay claim (its index: outbox_key_index.sql).
-- Parameters: kind (text), batch (int, 1..10000), lease (interval).
-- Notes: the key is the order id in the payload; one order's later events
--   wait behind its head, which is the price of per-key order. A dead head
--   (refused max_attempts times) holds its order's later events until a
--   person requeues it (requeue_dead.sql) or deletes it; they stay ready, so
--   outbox_lag.sql shows the order stuck. Counting dead as "done" instead
--   would send the later events ahead of it, out of order.
--   ORDER BY run_at alone, as claim.sql: the planner then walks jobs_ready_idx
--   and probes the key index once per candidate, stopping at :batch heads.
--   Measured with an order's three events written together: about 300
--   probes and 900 buffers before the LockRows for a batch of 100, the same
--   at 1,500 and at 15,000 unsent events (the outer UPDATE finds its rows by
--   a hash join over the table while it is small, by primary key once it is
--   bigger). Adding ", id" made it hash every unsent row and sort them on
--   every claim (15,000 rows read at 15,000, against about 300; 50x the
--   time). The lease and attempted_at count from clock_timestamp(), as in
--   claim.sql. It returns claim.sql's columns and then event_id, the id the
--   relay publishes the event under (schema.sql says why it is not the job id).

WITH next AS (
  SELECT id FROM jobs AS event
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
    AND kind = :'kind'
    AND NOT EXISTS (
      SELECT 1 FROM jobs AS earlier
      WHERE earlier.status IN ('ready', 'running', 'dead')
        AND earlier.kind = event.kind
        AND (earlier.payload->>'order_id') = (event.payload->>'order_id')
        AND earlier.id < event.id)
  ORDER BY run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = clock_timestamp() + :'lease'::interval,
    attempted_at = clock_timestamp()
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token, jobs.event_id;
