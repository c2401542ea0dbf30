-- lab/open_transaction.sql: LAB HELPER. The lock lab's BEGIN. The driver
-- (psycopg, not in autocommit) sends BEGIN before the first statement of a
-- transaction; this small statement makes that happen now, so the session
-- shows as "idle in transaction" from the moment BEGIN is clicked. now() is
-- the time the transaction started.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT now() AS transaction_started;
