-- claim_in_key_order.sql: the outbox relay's claim. Like claim.sql, but it
-- takes only the oldest unsent event of each order: an event whose order has
-- an earlier event still ready or running (waiting out a backoff, or held by
-- a relay) is left alone, so one order's events reach the broker in the
-- order they were written, whatever fails, and however many relays run.
-- Safe: yes. The production relay claim (its index: outbox_key_index.sql).
-- Parameters: kind (text), batch (int, 1..10000), lease (interval).
-- Notes: the key is the order id in the payload; one order's later events
--   wait behind its head, which is the price of per-key order. ORDER BY run_at
--   alone, as claim.sql: the planner then walks jobs_ready_idx and probes the
--   key index once per candidate, stopping at :batch heads (at 15,000 unsent
--   events: about 300 probes, 900 buffers). Adding ", id" made it hash the
--   whole backlog and sort it on every claim (2,000 buffers, 40x the time).

WITH next AS (
  SELECT id FROM jobs AS event
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
    AND kind = :'kind'
    AND NOT EXISTS (
      SELECT 1 FROM jobs AS earlier
      WHERE earlier.status IN ('ready', 'running')
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
    leased_until = now() + :'lease'::interval
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token;
