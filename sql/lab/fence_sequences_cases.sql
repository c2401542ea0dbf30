-- lab/fence_sequences_cases.sql: TEST HELPER. The sequences that attack
-- fence_sequences.sql, in a schema of their own with a quoted mixed-case name:
-- "Order Ids" at 40; falling, descending; narrow, an integer sequence never
-- read; restarted, RESTART WITH 10^10 and not read since (pg_sequences shows
-- its last_value NULL); near_the_end, within 2^32 of bigint's end.
-- Safe: NO outside a test's own database: fence_sequences.sql then moves them.
-- Parameters: none.

DO $cases$
BEGIN
  CREATE SCHEMA "Fence Lab";
  CREATE SEQUENCE "Fence Lab"."Order Ids";
  PERFORM setval('"Fence Lab"."Order Ids"', 40);
  CREATE SEQUENCE "Fence Lab".falling INCREMENT -1;
  CREATE SEQUENCE "Fence Lab".narrow AS integer;
  CREATE SEQUENCE "Fence Lab".restarted;
  ALTER SEQUENCE "Fence Lab".restarted RESTART WITH 10000000000;
  CREATE SEQUENCE "Fence Lab".near_the_end;
  PERFORM setval('"Fence Lab".near_the_end', 9223372036854775000);
END
$cases$;
