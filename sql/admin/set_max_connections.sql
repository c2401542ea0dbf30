-- admin/set_max_connections.sql: raise how many client sessions the server
-- accepts (written to postgresql.auto.conf; it takes effect at the next restart).
-- Safe: yes on the course's own embedded server, where `embedded.start` runs it
-- once; never on a server of your own (PGQ_DSN).
-- Parameters: count (int).

ALTER SYSTEM SET max_connections = :'count';
