-- lab/crash_board.sql: LAB HELPER. The crash lab's live board: every job with
-- its status, attempts, seconds left on its lease (negative once it has
-- passed) and last error, in id order.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT id, status, attempts,
       extract(epoch FROM leased_until - clock_timestamp())::float8 AS lease_left_s,
       last_error
FROM jobs
ORDER BY id;
