-- lab/database_count.sql: LAB HELPER. How many databases the autovacuum
-- launcher visits in turn (every one that takes connections, template1
-- included). It starts at most one worker every 100 ms, so with N databases it
-- comes back to any one of them only every max(autovacuum_naptime, N x 0.1 s).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) FROM pg_database WHERE datallowconn;
