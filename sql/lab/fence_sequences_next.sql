-- lab/fence_sequences_next.sql: TEST HELPER. The next value of each sequence
-- lab/fence_sequences_cases.sql made, taken with nextval.
-- Safe: NO outside a test's own database: it draws from them.
-- Parameters: none.

SELECT nextval('"Fence Lab"."Order Ids"') AS order_ids,
       nextval('"Fence Lab".restarted') AS restarted,
       nextval('"Fence Lab".near_the_end') AS near_the_end,
       nextval('"Fence Lab".falling') AS falling,
       nextval('"Fence Lab".narrow') AS narrow;
