-- lab/database_count.sql: LAB HELPER. About how many databases the autovacuum
-- launcher visits in turn: every one that takes connections, template1
-- included (it counts those with statistics, which a database gets once used). It spreads them
-- over autovacuum_naptime, never closer than 100 ms apart (110 ms when the
-- naptime would put them closer), so with N databases it comes back to any one
-- of them every naptime, or every N x 0.11 s when naptime / N <= 0.1 s.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) FROM pg_database WHERE datallowconn;
