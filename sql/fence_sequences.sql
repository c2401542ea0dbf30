-- fence_sequences.sql: run once on a replica just promoted to primary, in every database of
-- it, before any client writes there. Moves every sequence of this database (an
-- application's own, such as orders.id, as well as the jobs' identity) to the next multiple
-- of 2^32 that is more than 2^31 above its last value, as fence_epoch.sql moves the jobs'.
-- Why: a sequence is not WAL-logged at every nextval. It logs 32 values ahead of the one it
-- hands out (PostgreSQL 18, src/backend/commands/sequence.c, SEQ_LOG_VALS, in nextval_internal),
-- and the record of a later batch may be in the window of WAL an asynchronous replica never
-- received, so the promoted replica's sequence can be behind ids the old primary already
-- handed out. On a pair, 40 orders placed in that window were lost and the first order after
-- the promotion took id 1 again: a consumer that orders events per order id would take the new
-- order's `created` for a repeat of the lost one's. Moved, new ids start past any the old
-- primary could have issued, while it drew fewer than 2^31 values from one sequence in the gap.
-- Beside fence_epoch.sql, not instead of it: that statement also moves the jobs' tokens and
-- looks at max(id) in jobs. Run this one first; fence_epoch then moves the jobs' sequence once
-- more (one epoch of ids skipped) and reports the id the next enqueue takes.
-- Only ascending sequences with room move: one whose max_value (an integer serial's is
-- 2^31 - 1) is below its new start is listed with moved_to null, left as it was, and needs a
-- remedy of its own (a wider type). The new start is worked out in numeric, so a bigint
-- sequence within 2^32 of its type's end is listed like that too, where bigint arithmetic
-- stopped the whole statement ("bigint out of range") and moved none. pg_sequences shows
-- last_value NULL for a sequence with no nextval since it began, a RESTART or setval(s, v,
-- false); its start_value is then no bound (RESTART WITH 10^10 left it at 1, and the fence
-- moved the sequence back to 2^32), so an ascending one is read by one nextval, which returns
-- the value it held (one that then cannot move has lost that one value, a gap). setval's third argument is left at true: the next nextval returns
-- moved_to + increment. Functions: setval, nextval and pg_sequences, PostgreSQL 18 docs,
-- https://www.postgresql.org/docs/18/functions-sequence.html and
-- https://www.postgresql.org/docs/18/view-pg-sequences.html
-- Safe: yes, once per promotion; a sequence change is not rolled back with its transaction,
--   and a second run only skips another epoch of ids. A run cut midway (its session ended
--   by pg_terminate_backend while it waited on another session's ALTER SEQUENCE) had moved
--   none of 2,000; one that moved some is finished by running it again.
-- Parameters: none.

WITH seqs AS (
  SELECT format('%I.%I', schemaname, sequencename)::regclass AS seq, increment_by, max_value,
         last_value, start_value
  FROM pg_sequences
), moves AS (
  -- last_value is NULL where no nextval came since the start, a RESTART or setval(.., false):
  -- the value the next nextval returns is then the sequence's own, which nextval reads
  SELECT seq, increment_by, max_value,
         (div(coalesce(last_value, CASE WHEN increment_by > 0 THEN nextval(seq) END, start_value)
              + 2147483648.0, 4294967296) + 1) * 4294967296 AS base
  FROM seqs
)
SELECT seq::text AS sequence, base,
       CASE WHEN increment_by > 0 AND base <= max_value THEN setval(seq, base::bigint) END
         AS moved_to
FROM moves
ORDER BY 1;
