-- lab/flush_stats.sql: LAB HELPER. Ask this session to report its pending
-- table statistics (n_dead_tup and friends) as soon as it goes idle, instead
-- of up to a second later. PostgreSQL 15 and later.
-- Safe: yes.
-- Parameters: none.

SELECT pg_stat_force_next_flush();
