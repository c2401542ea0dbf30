-- exercise/model/complete_fenced.sql: the model answer to lesson 05's "complete
-- with a fence": mark the job done only while this worker's fencing token is
-- still the job's. fence_token goes up on every claim and is never reset, so a
-- stale worker's call matches no row even after the job was requeued (which
-- resets attempts to 0, so attempts cannot serve as the fence).
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint, the value this worker's claim returned).

UPDATE jobs
SET status = 'done', leased_until = NULL
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING id;
