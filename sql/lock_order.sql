-- lock_order.sql: the outbox writer's lock: the order's row, FOR UPDATE, taken
-- in the transaction that writes the order's next event, before the event's
-- INSERT. Per-key order (claim_in_key_order.sql) needs each order's events to
-- commit in id order: the claim's NOT EXISTS cannot see an earlier event that
-- is not yet committed, so if id 10 is allocated first and id 11 commits
-- first, 11 is the head and is published first. With this lock, a second
-- writer of the same order waits here until the first commits or rolls back,
-- and only then draws its id, so ids and commits go in one order per order.
-- Writers of different orders never wait for each other.
-- Safe: yes. Holds the row lock until the caller's transaction ends: keep that
--   transaction short, as any transaction that holds a lock.
-- Parameters: order_id (bigint).

SELECT id FROM orders WHERE id = :order_id FOR UPDATE;
